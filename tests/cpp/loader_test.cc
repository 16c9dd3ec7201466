#include "shardloader/loader.h"

#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardloader/shard_writer.h"
#include "shardloader/status.h"
#include "test_util.h"

namespace shardloader {
namespace {

using ::testing::HasSubstr;

// Writes `num_samples` samples ("sNNNN" with .cls = index, .txt = key) into
// shards of `per_shard` samples; returns the shard pattern for the Loader.
std::string WriteDataset(const testing::TempDir& dir, int num_samples, int per_shard) {
  auto writer =
      *ShardWriter::Create({.pattern = dir.Join("d-%04d.tar"), .max_samples_per_shard = per_shard});
  for (int i = 0; i < num_samples; ++i) {
    char key[16];
    std::snprintf(key, sizeof(key), "s%04d", i);
    EXPECT_TRUE(writer->Write(key, {{"cls", std::to_string(i)}, {"txt", key}}).ok());
  }
  EXPECT_TRUE(writer->Close().ok());
  return dir.path();
}

// Writes samples "first" (label 1) and "second" (label 2) into one shard
// named by `pattern`, with its index: data at 512 and 1536, then 2560 and
// 3584.
void WriteFirstAndSecond(const std::string& pattern) {
  auto writer = *ShardWriter::Create({.pattern = pattern});
  EXPECT_TRUE(writer->Write("first", {{"cls", "1"}, {"txt", "a"}}).ok());
  EXPECT_TRUE(writer->Write("second", {{"cls", "2"}, {"txt", "b"}}).ok());
  EXPECT_TRUE(writer->Close().ok());
}

std::vector<FieldSpec> LabelAndText() {
  return {FieldSpec{.name = "label", .extensions = {"cls"}, .kind = FieldKind::kInt},
          FieldSpec{.name = "text", .extensions = {"txt"}, .kind = FieldKind::kText}};
}

// All batches of one epoch as label lists.
std::vector<std::vector<int64_t>> Epoch(Loader& loader) {
  std::vector<std::vector<int64_t>> batches;
  while (true) {
    absl::StatusOr<std::optional<Batch>> batch = loader.Next();
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok() || !batch->has_value()) break;
    const BatchField* label = (*batch)->Find("label");
    const auto* values = static_cast<const int64_t*>(label->values.data);
    batches.emplace_back(values, values + (*batch)->num_samples());
  }
  return batches;
}

TEST(LoaderTest, YieldsEverySampleOnceWithMatchingFields) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 103, 10);
  auto loader = Loader::Create(
      {.shards = {shards}, .fields = LabelAndText(), .batch_size = 8, .window_shards = 3});
  ASSERT_TRUE(loader.ok()) << loader.status();
  EXPECT_EQ(*(*loader)->NumBatches(), 13);
  std::set<int64_t> seen;
  int64_t batches = 0;
  while (true) {
    absl::StatusOr<std::optional<Batch>> batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    if (!batch->has_value()) break;
    ++batches;
    const Batch& b = **batch;
    const auto* labels = static_cast<const int64_t*>(b.Find("label")->values.data);
    const BatchField* text = b.Find("text");
    const auto* offsets = static_cast<const int64_t*>(text->offsets->data);
    const auto* chars = static_cast<const char*>(text->values.data);
    for (int64_t i = 0; i < b.num_samples(); ++i) {
      char key[16];
      std::snprintf(key, sizeof(key), "s%04d", static_cast<int>(labels[i]));
      EXPECT_EQ(std::string(chars + offsets[i], offsets[i + 1] - offsets[i]), key);
      EXPECT_EQ(b.keys()[i], key);
      EXPECT_TRUE(seen.insert(labels[i]).second) << "repeated " << labels[i];
    }
  }
  EXPECT_EQ(batches, 13);
  EXPECT_EQ(seen.size(), 103u);
  // The epoch stays over until it is restarted.
  EXPECT_FALSE((*loader)->Next()->has_value());
}

TEST(LoaderTest, OrderDependsOnSeedAndEpochNotOnThreads) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 200, 17);
  auto make = [&](int threads, int io_threads, uint64_t seed) {
    return *Loader::Create({.shards = {shards},
                            .fields = LabelAndText(),
                            .batch_size = 16,
                            .seed = seed,
                            .window_shards = 3,
                            .num_threads = threads,
                            .num_io_threads = io_threads});
  };
  auto one = make(1, 1, 5);
  auto many = make(4, 3, 5);
  const auto reference = Epoch(*one);
  EXPECT_EQ(reference, Epoch(*many));
  EXPECT_NE(reference, Epoch(*make(1, 1, 6)));
  many->SetEpoch(1);
  const auto epoch1 = Epoch(*many);
  EXPECT_NE(reference, epoch1);
  many->SetEpoch(0);
  EXPECT_EQ(reference, Epoch(*many));
}

TEST(LoaderTest, NoShuffleKeepsShardOrder) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 30, 7);
  auto loader = *Loader::Create(
      {.shards = {shards}, .fields = LabelAndText(), .batch_size = 30, .shuffle = false});
  const auto batches = Epoch(*loader);
  ASSERT_EQ(batches.size(), 1u);
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(batches[0][i], i);
}

TEST(LoaderTest, DropLastAndRanksSplitTheData) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 100, 10);
  std::set<int64_t> all;
  for (int rank = 0; rank < 2; ++rank) {
    auto loader = *Loader::Create({.shards = {shards},
                                   .fields = LabelAndText(),
                                   .batch_size = 7,
                                   .drop_last = true,
                                   .rank = rank,
                                   .world_size = 2});
    const auto batches = Epoch(*loader);
    // 7 global batches of 2 x 7; the short last one is dropped on both ranks.
    EXPECT_EQ(batches.size(), 7u);
    EXPECT_EQ(static_cast<int64_t>(batches.size()), *loader->NumBatches());
    for (const auto& batch : batches) {
      EXPECT_EQ(batch.size(), 7u);
      for (int64_t label : batch) EXPECT_TRUE(all.insert(label).second);
    }
  }
  EXPECT_EQ(all.size(), 98u);
}

TEST(LoaderTest, FewerShardsThanRanksStillGivesEveryRankEqualWork) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 10, 10);  // one shard
  std::multiset<int64_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    auto loader = *Loader::Create({.shards = {shards},
                                   .fields = LabelAndText(),
                                   .batch_size = 2,
                                   .rank = rank,
                                   .world_size = 4});
    const auto batches = Epoch(*loader);
    ASSERT_EQ(batches.size(), 2u);  // 12 padded positions: 2 + 1 per rank
    EXPECT_EQ(batches[1].size(), 1u);
    for (const auto& batch : batches) all.insert(batch.begin(), batch.end());
  }
  EXPECT_EQ(all.size(), 12u);  // two samples repeated as padding
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 10u);
}

TEST(LoaderTest, ResumeYieldsExactlyTheRemainingBatches) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 150, 20);
  const LoaderOptions options{.shards = {shards},
                              .fields = LabelAndText(),
                              .batch_size = 8,
                              .seed = 3,
                              .epoch = 2,
                              .window_shards = 2};
  auto full = *Loader::Create(options);
  const auto reference = Epoch(*full);
  auto first = *Loader::Create(options);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(first->Next().ok());
  const LoaderState state = *first->State();
  EXPECT_EQ(state.position, 40);
  EXPECT_EQ(state.epoch, 2);
  auto resumed = *Loader::Create(options);
  ASSERT_TRUE(resumed->Resume(state).ok());
  resumed->SetEpoch(2);  // as a training loop does; keeps the position
  EXPECT_EQ(*resumed->NumBatches(), static_cast<int64_t>(reference.size()) - 5);
  const auto rest = Epoch(*resumed);
  EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(reference.begin() + 5, reference.end()));
  // Only the remaining samples were read.
  EXPECT_EQ(resumed->Stats().num_samples_read, 150 - 40);
  // A state from another order is refused.
  LoaderOptions other = options;
  other.seed = 4;
  EXPECT_EQ((*Loader::Create(other))->Resume(state).code(), absl::StatusCode::kInvalidArgument);
}

TEST(LoaderTest, SkipReplacesBadSamplesDeterministically) {
  testing::TempDir dir;
  auto writer =
      *ShardWriter::Create({.pattern = dir.Join("mixed-%d.tar"), .max_samples_per_shard = 10});
  for (int i = 0; i < 40; ++i) {
    const std::string label = i % 13 == 5 ? "bad" : std::to_string(i);
    ASSERT_TRUE(writer->Write("k" + std::to_string(i), {{"cls", label}, {"txt", "t"}}).ok());
  }
  ASSERT_TRUE(writer->Close().ok());
  LoaderOptions options{.shards = {dir.path()},
                        .fields = LabelAndText(),
                        .batch_size = 6,
                        .seed = 1,
                        .on_error = OnError::kSkip,
                        .max_errors = 10};
  auto loader = *Loader::Create(options);
  const auto first = Epoch(*loader);
  ASSERT_EQ(first.size(), 7u);  // the batch count is unchanged
  for (const auto& batch : first) {
    for (int64_t label : batch) EXPECT_NE(label % 13, 5);
  }
  const LoaderStats stats = loader->Stats();
  EXPECT_GE(stats.num_skipped, 3);  // samples 5, 18 and 31 (and bad replacements)
  ASSERT_FALSE(stats.skipped.empty());
  EXPECT_THAT(stats.skipped[0].uri, HasSubstr("mixed-"));
  EXPECT_THAT(stats.skipped[0].error, HasSubstr("field 'label'"));
  EXPECT_GE(stats.skipped[0].offset, 0);
  EXPECT_EQ(first, Epoch(**Loader::Create(options)));  // a rerun agrees
  options.max_errors = 1;
  auto strict = *Loader::Create(options);
  absl::StatusOr<std::optional<Batch>> batch;
  do {
    batch = strict->Next();
  } while (batch.ok() && batch->has_value());
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(batch.status().message(), HasSubstr("max_errors"));
}

TEST(LoaderTest, MissingShardIsNotFoundNamingIt) {
  testing::TempDir dir;
  auto loader =
      *Loader::Create({.shards = {dir.Join("nope-{0..1}.tar")}, .fields = LabelAndText()});
  absl::StatusOr<std::optional<Batch>> batch = loader->Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(batch.status().message()), HasSubstr("nope-"));
}

TEST(LoaderTest, BadLabelIsDataLossNamingShardOffsetAndKey) {
  testing::TempDir dir;
  auto writer = *ShardWriter::Create({.pattern = dir.Join("bad-%d.tar")});
  ASSERT_TRUE(writer->Write("good", {{"cls", "1"}, {"txt", "a"}}).ok());
  ASSERT_TRUE(writer->Write("broken", {{"cls", "one"}, {"txt", "b"}}).ok());
  ASSERT_TRUE(writer->Close().ok());
  auto loader = *Loader::Create({.shards = {dir.Join("bad-0.tar")},
                                 .fields = LabelAndText(),
                                 .batch_size = 2,
                                 .shuffle = false});
  absl::StatusOr<std::optional<Batch>> batch = loader->Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kDataLoss);
  const std::string message(batch.status().message());
  EXPECT_THAT(message, HasSubstr("bad-0.tar"));
  EXPECT_THAT(message, HasSubstr("offset 2048"));
  EXPECT_THAT(message, HasSubstr("sample broken"));
  EXPECT_THAT(message, HasSubstr("field 'label'"));
}

// A sample index from outside whose member claims a size near INT64_MAX: the
// Loader rejects the index before reading, allocating or mapping by it.
TEST(LoaderTest, AnIndexReachingPastTheShardIsDataLossNamingShardIndexAndKey) {
  testing::TempDir dir;
  WriteFirstAndSecond(dir.Join("huge-%d.tar"));
  const std::string index = dir.Join("huge-0.idx");
  testing::WriteFile(index,
                     "v1.2 2\ncls 512 1 first.cls txt 1536 1 first.txt\n"
                     "cls 2560 9223372036854775000 second.cls "
                     "txt 3584 1 second.txt\n");
  for (const bool memory_map : {true, false}) {
    SCOPED_TRACE(memory_map ? "memory-mapped" : "pread");
    auto loader = *Loader::Create({.shards = {dir.Join("huge-0.tar")},
                                   .fields = LabelAndText(),
                                   .batch_size = 2,
                                   .shuffle = false,
                                   .source = {.memory_map = memory_map}});
    absl::StatusOr<std::optional<Batch>> batch = loader->Next();
    ASSERT_FALSE(batch.ok());
    EXPECT_EQ(batch.status().code(), absl::StatusCode::kDataLoss);
    const std::string message(batch.status().message());
    EXPECT_THAT(message, HasSubstr("huge-0.tar"));
    EXPECT_THAT(message, HasSubstr("huge-0.idx, line 3"));
    EXPECT_THAT(message, HasSubstr("offset 2560"));
    EXPECT_THAT(message, HasSubstr("sample second"));
  }
}

// The sample count on an index's first line sizes the epoch's plan before
// the index is read: a huge one (which also overflowed the split of a long
// first line) is checked against the whole index, never allocated for.
TEST(LoaderTest, AHugeSampleCountInAnIndexIsDataLossNotAnAllocation) {
  testing::TempDir dir;
  WriteFirstAndSecond(dir.Join("count-%d.tar"));
  const std::string index = dir.Join("count-0.idx");
  const std::string written = testing::ReadFile(index);
  ASSERT_EQ(written.substr(0, 7), "v1.2 2\n");
  for (const char* count : {"10000000000", "9223372036854775807"}) {
    SCOPED_TRACE(count);
    testing::WriteFile(index, absl::StrCat("v1.2 ", count, written.substr(6)));
    for (const bool shuffle : {false, true}) {
      auto loader = *Loader::Create({.shards = {dir.Join("count-0.tar")},
                                     .fields = LabelAndText(),
                                     .batch_size = 2,
                                     .shuffle = shuffle});
      absl::StatusOr<std::optional<Batch>> batch = loader->Next();
      ASSERT_FALSE(batch.ok());
      EXPECT_EQ(batch.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(std::string(batch.status().message()),
                  HasSubstr(absl::StrCat("announces ", count, " samples, has 2")));
      EXPECT_EQ(GetContext(batch.status()).uri, index);
    }
  }
}

// An Npy field declared with a huge shape: a batch too large to allocate is
// an error, never std::bad_alloc ending the process; one beyond any address
// space is rejected when the Loader is created.
TEST(LoaderTest, AnNpyFieldTooLargeToAllocateIsAnErrorNotAnAbort) {
  testing::TempDir dir;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }";
  header.resize(117, ' ');
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  npy += static_cast<char>(header.size());
  npy += '\0';
  npy += header + std::string(16, '\0');
  auto writer = *ShardWriter::Create({.pattern = dir.Join("npy-%d.tar")});
  ASSERT_TRUE(writer->Write("k", {{"npy", npy}}).ok());
  ASSERT_TRUE(writer->Close().ok());
  const FieldSpec huge{.name = "x",
                       .extensions = {"npy"},
                       .kind = FieldKind::kNpy,
                       .dtype = DType::kFloat32,
                       .shape = {1000000000000}};  // 4 TB a sample
  auto loader =
      *Loader::Create({.shards = {dir.Join("npy-0.tar")}, .fields = {huge}, .shuffle = false});
  absl::StatusOr<std::optional<Batch>> batch = loader->Next();
  ASSERT_FALSE(batch.ok());
  // ResourceExhausted where the allocation fails; DataLoss (the array is
  // shorter than its shape) where the system overcommits memory.
  EXPECT_THAT(batch.status().code(),
              ::testing::AnyOf(absl::StatusCode::kResourceExhausted, absl::StatusCode::kDataLoss));
  EXPECT_THAT(std::string(batch.status().message()), HasSubstr("field 'x'"));
  absl::StatusOr<std::unique_ptr<Loader>> too_large = Loader::Create(
      {.shards = {dir.Join("npy-0.tar")}, .fields = {huge}, .batch_size = 1000, .shuffle = false});
  EXPECT_EQ(too_large.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_large.status().message()), HasSubstr("more than can be allocated"));
}

TEST(LoaderTest, RejectsBadOptions) {
  EXPECT_EQ(Loader::Create({.shards = {"x.tar"}, .fields = {}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Loader::Create({.shards = {"x.tar"}, .fields = LabelAndText(), .batch_size = 0})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Loader::Create({.shards = {"x.tar"}, .fields = LabelAndText(), .rank = 2, .world_size = 2})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Loader::Create({.shards = {"x.tar"},
                            .fields = LabelAndText(),
                            .on_error = OnError::kSkip,
                            .max_error_fraction = 2})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LoaderTest, WarmLoaderReusesBatchMemory) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 400, 50);
  auto loader = *Loader::Create(
      {.shards = {shards}, .fields = LabelAndText(), .batch_size = 4, .prefetch_batches = 2});
  std::set<const void*> buffers;
  while (true) {
    absl::StatusOr<std::optional<Batch>> batch = loader->Next();
    ASSERT_TRUE(batch.ok());
    if (!batch->has_value()) break;
    buffers.insert((*batch)->Find("label")->values.data);
  }
  // 100 batches came from a handful of pooled slots.
  EXPECT_LE(buffers.size(), 5u);
}

TEST(LoaderTest, StatsCountWhatHappened) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 60, 20);
  auto loader = *Loader::Create({.shards = {shards}, .fields = LabelAndText(), .batch_size = 8});
  EXPECT_EQ(Epoch(*loader).size(), 8u);
  const LoaderStats stats = loader->Stats();
  EXPECT_EQ(stats.num_shards_opened, 3);
  EXPECT_EQ(stats.num_samples_read, 60);
  EXPECT_EQ(stats.num_samples_decoded, 60);
  EXPECT_EQ(stats.num_batches, 8);
  EXPECT_EQ(stats.num_errors, 0);
  // The data of the fields read: labels "0".."59" and keys "s0000"...
  EXPECT_EQ(stats.num_bytes_read, 10 * 1 + 50 * 2 + 60 * 5);
  EXPECT_GT(stats.decode_busy, absl::ZeroDuration());
  EXPECT_THAT(stats.Summary(), HasSubstr("60 samples read"));
}

TEST(LoaderTest, CloseEndsIterationAndBatchesOutliveTheLoader) {
  testing::TempDir dir;
  const std::string shards = WriteDataset(dir, 50, 10);
  auto loader = *Loader::Create(
      {.shards = {shards}, .fields = LabelAndText(), .batch_size = 5, .shuffle = false});
  std::optional<Batch> kept = **loader->Next();
  loader->Close();
  EXPECT_EQ(loader->Next().status().code(), absl::StatusCode::kFailedPrecondition);
  loader.reset();
  EXPECT_EQ(static_cast<const int64_t*>(kept->Find("label")->values.data)[4], 4);
}

}  // namespace
}  // namespace shardloader

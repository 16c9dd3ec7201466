#include "shardloader/format/sample_reader.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardloader/format/tar_writer.h"
#include "shardloader/io/memory_source.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

class StringSink : public ByteSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  absl::Status Write(absl::string_view data) override {
    out_->append(data.data(), data.size());
    return absl::OkStatus();
  }

 private:
  std::string* out_;
};

// A tar archive holding `members` (name, data) in order.
std::string MakeTar(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string archive;
  auto writer = *TarWriter::Create(std::make_unique<StringSink>(&archive));
  for (const auto& [name, data] : members) EXPECT_TRUE(writer->AddFile(name, data).ok());
  EXPECT_TRUE(writer->Finish().ok());
  return archive;
}

std::vector<Sample> ReadAll(const std::string& archive,
                            std::optional<std::vector<std::string>> wanted = std::nullopt) {
  SampleReader reader(std::make_unique<MemorySource>("mem.tar", archive), std::move(wanted));
  std::vector<Sample> samples;
  Sample sample;  // reused, as the loader does
  while (true) {
    absl::StatusOr<bool> read = reader.Next(&sample);
    EXPECT_TRUE(read.ok()) << read.status();
    if (!read.ok() || !*read) break;
    samples.push_back(sample);
  }
  return samples;
}

TEST(SplitKeyTest, KeyIsThePathUpToTheFirstDotOfTheFileName) {
  auto split = SplitKey("dir.v2/n014_100.Seg.PNG");
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->key, "dir.v2/n014_100");
  EXPECT_EQ(split->extension, "seg.png");
  EXPECT_FALSE(SplitKey("README").has_value());
  EXPECT_FALSE(SplitKey("dir/.hidden").has_value());
  EXPECT_FALSE(SplitKey("trailing.").has_value());
}

TEST(SampleReaderTest, GroupsConsecutiveMembersWithOneKey) {
  const std::string archive = MakeTar({{"a/0001.jpg", "J1"},
                                       {"a/0001.cls", "3"},
                                       {"a/0002.JPG", "J2"},
                                       {"a/0002.cls", "4"},
                                       {"0003.txt", "hello"}});
  std::vector<Sample> samples = ReadAll(archive);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].key, "a/0001");
  EXPECT_EQ(samples[0].offset, 0);
  EXPECT_EQ(*samples[0].shard, "mem.tar");
  ASSERT_NE(samples[0].Find("cls"), nullptr);
  EXPECT_EQ(samples[0].Find("cls")->data, "3");
  EXPECT_EQ(samples[1].key, "a/0002");
  EXPECT_EQ(samples[1].index, 1);
  EXPECT_EQ(samples[1].offset, 2 * 1024);         // two members of one block each
  EXPECT_EQ(samples[1].Find("jpg")->data, "J2");  // extension lowercased
  EXPECT_EQ(samples[2].Find("txt")->data, "hello");
}

TEST(SampleReaderTest, SkipsMetadataAndNamesWithoutExtension) {
  const std::string archive =
      MakeTar({{"__index__.json", "{}"}, {"README", "x"}, {"k.bin", "1"}, {"dir/__meta__", "m"}});
  std::vector<Sample> samples = ReadAll(archive);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].key, "k");
}

// A non-empty shard that yields no sample is DataLoss, not an empty shard;
// an empty archive still has no samples.
TEST(SampleReaderTest, MembersButNoSampleIsDataLossNamingTheShard) {
  const std::string archive = MakeTar({{"README", "x"}, {"__meta__.json", "{}"}});
  SampleReader reader(std::make_unique<MemorySource>("none.tar", archive));
  Sample sample;
  absl::StatusOr<bool> read = reader.Next(&sample);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  const std::string message(read.status().message());
  EXPECT_THAT(message, ::testing::HasSubstr("no sample"));
  EXPECT_THAT(message, ::testing::HasSubstr("'README'"));
  EXPECT_EQ(GetContext(read.status()).uri, "none.tar");
  EXPECT_EQ(GetContext(read.status()).offset, 0);
  EXPECT_TRUE(ReadAll(MakeTar({})).empty());
  EXPECT_TRUE(ReadAll(std::string(10240, '\0')).empty());
}

TEST(SampleReaderTest, RepeatedExtensionIsDataLossNamingTheSample) {
  const std::string archive = MakeTar({{"k.jpg", "1"}, {"k.cls", "2"}, {"k.jpg", "3"}});
  SampleReader reader(std::make_unique<MemorySource>("dup.tar", archive));
  Sample sample;
  absl::StatusOr<bool> read = reader.Next(&sample);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(read.status().message()),
              ::testing::AllOf(::testing::HasSubstr("dup.tar"), ::testing::HasSubstr("offset 2048"),
                               ::testing::HasSubstr("sample k")));
}

TEST(SampleReaderTest, UnwantedFieldsAreListedButNotRead) {
  const std::string archive = MakeTar({{"k.jpg", "JPEG"}, {"k.cls", "2"}});
  std::vector<Sample> samples = ReadAll(archive, std::vector<std::string>{"cls"});
  ASSERT_EQ(samples.size(), 1u);
  ASSERT_EQ(samples[0].fields.size(), 2u);
  EXPECT_EQ(samples[0].Find("jpg")->data, "");
  EXPECT_EQ(samples[0].Find("cls")->data, "2");
}

TEST(SampleReaderTest, ReusedSampleKeepsItsBuffers) {
  const std::string archive = MakeTar({{"a.bin", std::string(1000, 'x')},
                                       {"a.cls", "1"},
                                       {"b.bin", std::string(800, 'y')},
                                       {"b.cls", "2"}});
  SampleReader reader(std::make_unique<MemorySource>("mem.tar", archive));
  Sample sample;
  ASSERT_TRUE(*reader.Next(&sample));
  const char* buffer = sample.Find("bin")->data.data();
  ASSERT_TRUE(*reader.Next(&sample));
  EXPECT_EQ(sample.key, "b");
  EXPECT_EQ(sample.fields.size(), 2u);
  EXPECT_EQ(sample.Find("bin")->data, std::string(800, 'y'));
  EXPECT_EQ(sample.Find("bin")->data.data(), buffer);  // no new allocation
  EXPECT_FALSE(*reader.Next(&sample));
}

TEST(SampleReaderTest, TruncatedShardIsDataLoss) {
  std::string archive = MakeTar({{"k.bin", std::string(3000, 'x')}});
  archive.resize(1500);
  SampleReader reader(std::make_unique<MemorySource>("cut.tar", archive));
  Sample sample;
  absl::StatusOr<bool> read = reader.Next(&sample);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(read.status().message()), ::testing::HasSubstr("cut.tar"));
}

}  // namespace
}  // namespace shardloader

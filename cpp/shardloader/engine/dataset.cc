#include "shardloader/engine/dataset.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/status.h"

namespace shardloader::internal_pipeline {
namespace {

using internal_stats::ScopedTimer;
using internal_stats::StatsCounters;

// Reads `uri` whole, or only up to the first newline with `first_line`.
absl::StatusOr<std::string> ReadText(const std::string& uri, const SourceOptions& options,
                                     bool first_line) {
  SHARDLOADER_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenSource(uri, options));
  std::string text;
  char buffer[4096];
  while (true) {
    SHARDLOADER_ASSIGN_OR_RETURN(const size_t n,
                                 source->Read(buffer, first_line ? 64 : sizeof(buffer)));
    if (n == 0) return text;
    text.append(buffer, n);
    if (first_line && text.find('\n') != std::string::npos) return text;
  }
}

// Sample counts that Count() takes from an index file's first line without
// reading the rest. The count sizes the epoch's plan (4 bytes a sample of a
// window) before the index is read, so a larger one is believed only after
// the whole file was parsed and holds that many samples.
constexpr int64_t kMaxUncheckedCount = int64_t{1} << 20;

// Whether reading a shard's optional index file failed because there is
// none to read: missing, or refused (S3 answers 403 for a missing key
// without ListBucket permission). The shard is then scanned instead.
bool NoIndexFile(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsPermissionDenied(status);
}

}  // namespace

Dataset::Dataset(std::vector<std::string> shards, std::shared_ptr<const LoaderOptions> options,
                 std::shared_ptr<internal_stats::StatsCounters> stats)
    : shards_(std::move(shards)),
      options_(std::move(options)),
      stats_(std::move(stats)),
      max_open_shards_(
          static_cast<size_t>(std::clamp<int64_t>(2 * options_->window_shards + 2, 8, 256))),
      opening_(new absl::Mutex[shards_.size()]) {
  for (const std::string& uri : shards_) {
    state_.push_back({.uri = std::make_shared<const std::string>(uri)});
  }
}

absl::StatusOr<std::vector<int64_t>> Dataset::Counts() {
  {
    absl::MutexLock lock(&mu_);
    if (counts_.has_value()) return *counts_;
  }
  std::vector<absl::StatusOr<int64_t>> counts(shards_.size(), int64_t{0});
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < shards_.size(); i = next++) {
      counts[i] = Count(static_cast<int64_t>(i));
    }
  };
  const size_t num_threads =
      std::min<size_t>(std::max(1, options_->num_io_threads), shards_.size());
  std::vector<std::thread> threads;
  for (size_t t = 1; t < num_threads; ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  std::vector<int64_t> out;
  out.reserve(counts.size());
  for (absl::StatusOr<int64_t>& count : counts) {
    SHARDLOADER_RETURN_IF_ERROR(count.status());
    out.push_back(*count);
  }
  absl::MutexLock lock(&mu_);
  counts_ = out;
  return out;
}

absl::StatusOr<int64_t> Dataset::Count(int64_t shard) {
  {
    absl::MutexLock lock(&mu_);
    if (state_[shard].count.has_value()) return *state_[shard].count;
  }
  const std::string index_uri = IndexUriFor(shards_[shard]);
  absl::StatusOr<std::string> head = ReadText(index_uri, options_->source, true);
  int64_t count = 0;
  if (head.ok()) {
    // Split a named string: views into a temporary would dangle.
    const std::string line = head->substr(0, head->find('\n'));
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() != 2 || !absl::SimpleAtoi(words[1], &count) || count < 0) {
      return WithContext(absl::DataLossError("malformed shard index: its first line is not "
                                             "\"v1.2 <samples>\""),
                         {.uri = index_uri});
    }
    if (count > kMaxUncheckedCount) {
      SHARDLOADER_ASSIGN_OR_RETURN(const std::string text,
                                   ReadText(index_uri, options_->source, false));
      SHARDLOADER_RETURN_IF_ERROR(ParseShardIndex(text, index_uri).status());
    }
  } else if (NoIndexFile(head.status())) {
    SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<const ShardIndex> index, Scan(shard));
    count = index->num_samples();
  } else {
    return head.status();
  }
  absl::MutexLock lock(&mu_);
  state_[shard].count = count;
  return count;
}

absl::StatusOr<std::shared_ptr<const ShardIndex>> Dataset::Scan(int64_t shard) {
  SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessSource> source, Open(shard));
  auto index = std::make_shared<ShardIndex>();
  absl::Status status;
  {
    ScopedTimer timer(stats_->read_busy_ns);
    status = ScanShardIndex(StreamOf(source, options_->source.block_size_bytes), index.get());
  }
  absl::MutexLock lock(&mu_);
  if (!status.ok()) {
    if (options_->on_error != OnError::kSkip || absl::IsNotFound(status)) return status;
    stats_->RecordSkip(status);
  }
  state_[shard].index = index;
  return index;
}

absl::StatusOr<std::shared_ptr<const ShardIndex>> Dataset::Index(int64_t shard) {
  int64_t count = -1;
  {
    absl::MutexLock lock(&mu_);
    if (state_[shard].index != nullptr) return state_[shard].index;
    count = state_[shard].count.value_or(-1);
  }
  const std::string index_uri = IndexUriFor(shards_[shard]);
  absl::StatusOr<std::string> text = ReadText(index_uri, options_->source, false);
  if (NoIndexFile(text.status())) return Scan(shard);
  SHARDLOADER_RETURN_IF_ERROR(text.status());
  SHARDLOADER_ASSIGN_OR_RETURN(ShardIndex parsed, ParseShardIndex(*text, index_uri));
  SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessSource> source, Open(shard));
  SHARDLOADER_RETURN_IF_ERROR(
      CheckShardIndexBounds(parsed, source->size(), shards_[shard], index_uri));
  if (count >= 0 && parsed.num_samples() != count) {
    return WithContext(
        absl::DataLossError(absl::StrCat("the shard index changed while in use: ", count,
                                         " samples, now ", parsed.num_samples())),
        {.uri = index_uri});
  }
  absl::MutexLock lock(&mu_);
  if (state_[shard].index == nullptr) {
    state_[shard].index = std::make_shared<const ShardIndex>(std::move(parsed));
  }
  return state_[shard].index;
}

absl::StatusOr<std::shared_ptr<RandomAccessSource>> Dataset::Open(int64_t shard) {
  absl::MutexLock opening(&opening_[shard]);
  {
    absl::MutexLock lock(&mu_);
    for (OpenShard& open : open_) {
      if (open.shard == shard) {
        open.last_use = ++clock_;
        return open.source;
      }
    }
  }
  absl::StatusOr<std::shared_ptr<RandomAccessSource>> source;
  {
    ScopedTimer timer(stats_->read_busy_ns);
    source = OpenRandomAccess(shards_[shard], options_->source);
  }
  SHARDLOADER_RETURN_IF_ERROR(source.status());
  StatsCounters::Add(stats_->num_shards_opened, 1);
  absl::MutexLock lock(&mu_);
  if (open_.size() >= max_open_shards_) {
    auto oldest = std::min_element(
        open_.begin(), open_.end(),
        [](const OpenShard& a, const OpenShard& b) { return a.last_use < b.last_use; });
    open_.erase(oldest);
  }
  open_.push_back({.shard = shard, .source = *source, .last_use = ++clock_});
  return *source;
}

void Dataset::Prefetch(int64_t shard) const {
  PrefetchShard(shards_[shard], options_->source).IgnoreError();
}

absl::Status Dataset::Read(SampleRef ref, absl::Span<const std::string> wanted, Sample* out) {
  SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<const ShardIndex> index, Index(ref.shard));
  SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessSource> source, Open(ref.shard));
  {
    absl::MutexLock lock(&mu_);
    out->shard = state_[ref.shard].uri;
  }
  out->shard_index = ref.shard;
  absl::Status status;
  {
    ScopedTimer timer(stats_->read_busy_ns);
    status = ReadIndexedSample(source, *index, ref.index, wanted, out);
  }
  StatsCounters::Add(stats_->num_samples_read, 1);
  int64_t bytes = 0;
  for (const SampleField& field : out->fields) bytes += field.bytes().size();
  StatsCounters::Add(stats_->num_bytes_read, bytes);
  return status;
}

}  // namespace shardloader::internal_pipeline

#include "shardloader/shard_writer.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "shardloader/format/sample.h"
#include "shardloader/format/shard_index.h"
#include "shardloader/format/tar_writer.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/io/uri.h"
#include "shardloader/status.h"

namespace shardloader {
namespace internal_writer {

// The shard being written: its output (io/output/output_file.h: a temporary local
// file or an S3 multipart upload, discarded unless committed) and the tar
// writer feeding it.
class OpenShard {
 public:
  OpenShard(std::string path, std::unique_ptr<OutputFile> file)
      : path(std::move(path)), file(std::move(file)) {}

  std::string path;
  std::unique_ptr<OutputFile> file;
  std::unique_ptr<TarWriter> tar;  // writes to `file`; destroyed before it
  ShardIndex index;                // written beside the shard as "<name>.idx"
  int64_t num_samples = 0;
};

}  // namespace internal_writer

namespace {

using internal_writer::OpenShard;

constexpr size_t kTarBlock = 512;

int64_t TarMemberBytes(size_t name_size, size_t data_size) {
  // Header (plus a PAX header for long names) and data padded to blocks.
  const int64_t headers = name_size > 100 ? 3 * kTarBlock : kTarBlock;
  return headers + (data_size + kTarBlock - 1) / kTarBlock * kTarBlock;
}

absl::Status ValidateSample(absl::string_view key, const std::vector<ShardWriter::Field>& fields) {
  // The member name the first field gets must split back into `key`.
  const std::string first_member =
      fields.empty() ? std::string() : absl::StrCat(key, ".", fields[0].first);
  const std::optional<KeyAndExtension> probe = SplitKey(first_member);
  if (key.empty() || !probe.has_value() || probe->key != key) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample key '", key,
                     "' is invalid: it needs a file name without dots and at least one "
                     "field"));
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string& extension = fields[i].first;
    if (extension.empty() || absl::StartsWith(extension, ".") ||
        absl::StrContains(extension, "/")) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample '", key, "': invalid extension '", extension, "'"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (fields[j].first == extension) {
        return absl::InvalidArgumentError(
            absl::StrCat("sample '", key, "': extension '", extension, "' given twice"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ShardPath(absl::string_view pattern, int64_t index) {
  // printf style: one %d conversion, optionally zero-padded ("%06d").
  const size_t percent = pattern.find('%');
  if (percent != absl::string_view::npos &&
      (pattern.find('%', percent + 1) != absl::string_view::npos ||
       absl::StrContains(pattern, "..}"))) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard pattern '", pattern,
                     "' has more than one placeholder: it needs exactly one, such as %06d or "
                     "{000000..}"));
  }
  if (percent != absl::string_view::npos) {
    const size_t d = pattern.find('d', percent);
    int width = 0;
    const absl::string_view spec = pattern.substr(percent + 1, d - percent - 1);
    if (d != absl::string_view::npos && (spec.empty() || absl::SimpleAtoi(spec, &width))) {
      return absl::StrCat(pattern.substr(0, percent), absl::StrFormat("%0*d", width, index),
                          pattern.substr(d + 1));
    }
  }
  // Open brace range: "{000000..}".
  const size_t open = pattern.find('{');
  const size_t close = pattern.find("..}", open);
  if (open != absl::string_view::npos && close != absl::string_view::npos) {
    const absl::string_view start = pattern.substr(open + 1, close - open - 1);
    int64_t first = 0;
    if (absl::SimpleAtoi(start, &first)) {
      return absl::StrCat(pattern.substr(0, open),
                          absl::StrFormat("%0*d", start.size(), first + index),
                          pattern.substr(close + 3));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "shard pattern '", pattern, "' needs a number placeholder such as %06d or {000000..}"));
}

absl::StatusOr<std::unique_ptr<ShardWriter>> ShardWriter::Create(ShardWriterOptions options) {
  SHARDLOADER_RETURN_IF_ERROR(ShardPath(options.pattern, 0).status());
  if (options.max_size_bytes <= 0 || options.max_samples_per_shard <= 0) {
    return absl::InvalidArgumentError("max_size_bytes and max_samples_per_shard must be positive");
  }
  const std::filesystem::path directory = std::filesystem::path(options.pattern).parent_path();
  std::error_code error;
  if (!IsRemoteUri(options.pattern) && !directory.empty() &&
      !std::filesystem::is_directory(directory, error)) {
    return WithContext(absl::NotFoundError("output directory does not exist"),
                       {.uri = directory.string()});
  }
  if (options.index_path.empty()) {
    options.index_path = (directory / "index.json").string();
  }
  return std::unique_ptr<ShardWriter>(new ShardWriter(std::move(options)));
}

ShardWriter::ShardWriter(ShardWriterOptions options)
    : options_(std::move(options)), next_index_(options_.first_shard_index) {}

ShardWriter::~ShardWriter() = default;  // an unfinished shard is removed

absl::Status ShardWriter::Write(absl::string_view key, const std::vector<Field>& fields) {
  if (closed_) return absl::FailedPreconditionError("the ShardWriter is closed");
  SHARDLOADER_RETURN_IF_ERROR(ValidateSample(key, fields));
  int64_t sample_bytes = 0;
  for (const Field& field : fields) {
    sample_bytes += TarMemberBytes(key.size() + 1 + field.first.size(), field.second.size());
  }
  if (current_ != nullptr && current_->num_samples > 0 &&
      (current_->num_samples >= options_.max_samples_per_shard ||
       current_->tar->bytes_written() + sample_bytes + 2 * kTarBlock > options_.max_size_bytes)) {
    SHARDLOADER_RETURN_IF_ERROR(FinishShard());
  }
  if (current_ == nullptr) {
    SHARDLOADER_ASSIGN_OR_RETURN(std::string path, ShardPath(options_.pattern, next_index_));
    SHARDLOADER_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file,
                                 CreateOutputFile(path, options_.destination));
    auto shard = std::make_unique<OpenShard>(path, std::move(file));
    SHARDLOADER_ASSIGN_OR_RETURN(shard->tar, TarWriter::Create(ForwardingSink(shard->file.get())));
    current_ = std::move(shard);
    ++next_index_;
  }
  current_->index.AddSample(key);
  for (const Field& field : fields) {
    SHARDLOADER_RETURN_IF_ERROR(
        current_->tar->AddFile(absl::StrCat(key, ".", field.first), field.second));
    const int64_t size = static_cast<int64_t>(field.second.size());
    const int64_t padded = (size + kTarBlock - 1) / kTarBlock * kTarBlock;
    current_->index.AddMember(field.first, current_->tar->bytes_written() - padded, size);
  }
  ++current_->num_samples;
  return absl::OkStatus();
}

absl::Status ShardWriter::FinishShard() {
  std::unique_ptr<OpenShard> shard = std::move(current_);
  SHARDLOADER_RETURN_IF_ERROR(shard->tar->Finish());
  ShardInfo info{.path = shard->path,
                 .num_samples = shard->num_samples,
                 .size_bytes = shard->file->size_bytes(),
                 .sha256 = shard->file->Sha256HexDigest()};
  // The index first: a shard under its final name always has one.
  SHARDLOADER_RETURN_IF_ERROR(WriteWholeFile(IndexUriFor(shard->path),
                                             FormatShardIndex(shard->index), options_.destination));
  SHARDLOADER_RETURN_IF_ERROR(shard->file->Commit());
  shards_.push_back(std::move(info));
  return absl::OkStatus();
}

absl::Status ShardWriter::WriteIndex() const {
  nlohmann::json shards = nlohmann::json::array();
  int64_t total = 0;
  for (const ShardInfo& info : shards_) {
    shards.push_back({{"url", std::filesystem::path(info.path).filename().string()},
                      {"num_samples", info.num_samples},
                      {"size_bytes", info.size_bytes},
                      {"sha256", info.sha256}});
    total += info.num_samples;
  }
  const nlohmann::json index = {
      {"format", "shardloader-index"}, {"version", 1}, {"num_samples", total}, {"shards", shards}};
  return WriteWholeFile(options_.index_path, index.dump(2) + "\n", options_.destination);
}

void ShardWriter::Abort() {
  closed_ = true;
  current_.reset();  // discards the unfinished shard (temporary file or upload)
}

absl::Status ShardWriter::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  if (current_ != nullptr) SHARDLOADER_RETURN_IF_ERROR(FinishShard());
  return WriteIndex();
}

}  // namespace shardloader

#include "shardloader/shard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "shardloader/format/sample.h"
#include "shardloader/format/shard_index.h"
#include "shardloader/format/tar_writer.h"
#include "shardloader/status.h"

namespace shardloader {
namespace internal_writer {

// The shard being written: a temporary file and its tar writer.
class OpenShard {
 public:
  OpenShard(std::string path, std::string temp_path, int fd,
            std::unique_ptr<TarWriter> tar)
      : path(std::move(path)),
        temp_path(std::move(temp_path)),
        fd(fd),
        tar(std::move(tar)) {}
  ~OpenShard() {
    if (fd >= 0) ::close(fd);
    if (!renamed) std::remove(temp_path.c_str());
  }

  std::string path;
  std::string temp_path;
  int fd;
  std::unique_ptr<TarWriter> tar;
  ShardIndex index;  // written beside the shard as "<name>.idx"
  int64_t num_samples = 0;
  bool renamed = false;
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

absl::StatusOr<std::string> Sha256File(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return WithContext(absl::UnavailableError("cannot reread shard"), {.uri = path});
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(
      EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  std::vector<char> buffer(1 << 20);
  while (file) {
    file.read(buffer.data(), buffer.size());
    EVP_DigestUpdate(context.get(), buffer.data(), file.gcount());
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest;
  unsigned int size = 0;
  EVP_DigestFinal_ex(context.get(), digest.data(), &size);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) absl::StrAppendFormat(&hex, "%02x", digest[i]);
  return hex;
}

// Writes `content` to `path` under a temporary name, then renames it.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content) {
  const std::string temp = absl::StrCat(path, ".partial-", ::getpid());
  {
    std::ofstream out(temp, std::ios::trunc | std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out.flush()) {
      std::remove(temp.c_str());
      return WithContext(absl::UnavailableError("cannot write file"), {.uri = path});
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    return WithContext(ErrnoToStatus(errno, "cannot rename file"), {.uri = path});
  }
  return absl::OkStatus();
}

absl::Status ValidateSample(absl::string_view key,
                            const std::vector<ShardWriter::Field>& fields) {
  // The member name the first field gets must split back into `key`.
  const std::string first_member =
      fields.empty() ? std::string() : absl::StrCat(key, ".", fields[0].first);
  const std::optional<KeyAndExtension> probe = SplitKey(first_member);
  if (key.empty() || !probe.has_value() || probe->key != key) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample key '", key,
        "' is invalid: it needs a file name without dots and at least one "
        "field"));
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string& extension = fields[i].first;
    if (extension.empty() || absl::StartsWith(extension, ".") ||
        absl::StrContains(extension, "/")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sample '", key, "': invalid extension '", extension, "'"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (fields[j].first == extension) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sample '", key, "': extension '", extension, "' given twice"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ShardPath(absl::string_view pattern, int64_t index) {
  // printf style: one %d conversion, optionally zero-padded ("%06d").
  const size_t percent = pattern.find('%');
  if (percent != absl::string_view::npos) {
    const size_t d = pattern.find('d', percent);
    int width = 0;
    const absl::string_view spec = pattern.substr(percent + 1, d - percent - 1);
    if (d != absl::string_view::npos &&
        (spec.empty() || absl::SimpleAtoi(spec, &width))) {
      return absl::StrCat(pattern.substr(0, percent),
                          absl::StrFormat("%0*d", width, index),
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
      "shard pattern '", pattern,
      "' needs a number placeholder such as %06d or {000000..}"));
}

absl::StatusOr<std::unique_ptr<ShardWriter>> ShardWriter::Create(
    ShardWriterOptions options) {
  SL_RETURN_IF_ERROR(ShardPath(options.pattern, 0).status());
  if (options.max_size_bytes <= 0 || options.max_samples_per_shard <= 0) {
    return absl::InvalidArgumentError(
        "max_size_bytes and max_samples_per_shard must be positive");
  }
  const std::filesystem::path directory =
      std::filesystem::path(options.pattern).parent_path();
  std::error_code error;
  if (!directory.empty() && !std::filesystem::is_directory(directory, error)) {
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

absl::Status ShardWriter::Write(absl::string_view key,
                                const std::vector<Field>& fields) {
  if (closed_) return absl::FailedPreconditionError("the ShardWriter is closed");
  SL_RETURN_IF_ERROR(ValidateSample(key, fields));
  int64_t sample_bytes = 0;
  for (const Field& field : fields) {
    sample_bytes += TarMemberBytes(key.size() + 1 + field.first.size(),
                                   field.second.size());
  }
  if (current_ != nullptr && current_->num_samples > 0 &&
      (current_->num_samples >= options_.max_samples_per_shard ||
       current_->tar->bytes_written() + sample_bytes + 2 * kTarBlock >
           options_.max_size_bytes)) {
    SL_RETURN_IF_ERROR(FinishShard());
  }
  if (current_ == nullptr) {
    SL_ASSIGN_OR_RETURN(std::string path, ShardPath(options_.pattern, next_index_));
    const std::filesystem::path final_path(path);
    const std::string temp_path =
        (final_path.parent_path() /
         absl::StrCat(".", final_path.filename().string(), ".partial-", ::getpid()))
            .string();
    const int fd = ::open(temp_path.c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return WithContext(ErrnoToStatus(errno, "cannot create shard"), {.uri = path});
    }
    absl::StatusOr<std::unique_ptr<TarWriter>> tar = TarWriter::Create(fd, path);
    if (!tar.ok()) {
      ::close(fd);
      std::remove(temp_path.c_str());
      return tar.status();
    }
    current_ = std::make_unique<OpenShard>(path, temp_path, fd, *std::move(tar));
    ++next_index_;
  }
  current_->index.AddSample(key);
  for (const Field& field : fields) {
    SL_RETURN_IF_ERROR(
        current_->tar->AddFile(absl::StrCat(key, ".", field.first), field.second));
    const int64_t size = static_cast<int64_t>(field.second.size());
    const int64_t padded = (size + kTarBlock - 1) / kTarBlock * kTarBlock;
    current_->index.AddMember(field.first, current_->tar->bytes_written() - padded,
                              size);
  }
  ++current_->num_samples;
  return absl::OkStatus();
}

absl::Status ShardWriter::FinishShard() {
  std::unique_ptr<OpenShard> shard = std::move(current_);
  SL_RETURN_IF_ERROR(shard->tar->Finish());
  if (::fsync(shard->fd) != 0 || ::close(shard->fd) != 0) {
    shard->fd = -1;
    return WithContext(ErrnoToStatus(errno, "cannot flush shard"),
                       {.uri = shard->path});
  }
  shard->fd = -1;
  ShardInfo info{.path = shard->path, .num_samples = shard->num_samples};
  SL_ASSIGN_OR_RETURN(info.sha256, Sha256File(shard->temp_path));
  std::error_code error;
  info.size_bytes =
      static_cast<int64_t>(std::filesystem::file_size(shard->temp_path, error));
  // The index first: a shard under its final name always has one.
  SL_RETURN_IF_ERROR(WriteFileAtomically(IndexUriFor(shard->path),
                                         FormatShardIndex(shard->index)));
  if (std::rename(shard->temp_path.c_str(), shard->path.c_str()) != 0) {
    return WithContext(ErrnoToStatus(errno, "cannot rename finished shard"),
                       {.uri = shard->path});
  }
  shard->renamed = true;
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
  const nlohmann::json index = {{"format", "shardloader-index"},
                                {"version", 1},
                                {"num_samples", total},
                                {"shards", shards}};
  return WriteFileAtomically(options_.index_path, index.dump(2) + "\n");
}

void ShardWriter::Abort() {
  closed_ = true;
  current_.reset();  // removes the unfinished shard's temporary file
}

absl::Status ShardWriter::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  if (current_ != nullptr) SL_RETURN_IF_ERROR(FinishShard());
  return WriteIndex();
}

}  // namespace shardloader

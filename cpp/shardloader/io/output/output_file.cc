#include "shardloader/io/output/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shardloader/io/remote/s3_client.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

constexpr size_t kMinPartBytes = size_t{5} << 20;  // S3's smallest part but the last

class LocalOutputFile final : public OutputFile {
 public:
  static absl::StatusOr<std::unique_ptr<OutputFile>> Create(const std::string& path) {
    const std::filesystem::path final_path(path);
    std::string temp = (final_path.parent_path() /
                        absl::StrCat(".", final_path.filename().string(), ".partial-", ::getpid()))
                           .string();
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return WithContext(ErrnoToStatus(errno, "cannot create file"), {.uri = path});
    return std::unique_ptr<OutputFile>(new LocalOutputFile(path, std::move(temp), fd));
  }
  ~LocalOutputFile() override { Abort(); }

  absl::Status Commit() override {
    const bool synced = ::fsync(fd_) == 0;
    const int error = errno;
    const bool closed = ::close(fd_) == 0;
    fd_ = -1;
    if (!synced || !closed) {
      return WithContext(ErrnoToStatus(synced ? errno : error, "cannot flush file"),
                         {.uri = uri()});
    }
    if (std::rename(temp_.c_str(), uri().c_str()) != 0) {
      return WithContext(ErrnoToStatus(errno, "cannot rename finished file"), {.uri = uri()});
    }
    committed_ = true;
    return absl::OkStatus();
  }

  void Abort() override {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!committed_) std::remove(temp_.c_str());
    committed_ = true;  // nothing left to undo
  }

 protected:
  absl::Status Append(absl::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n >= 0) {
        data.remove_prefix(static_cast<size_t>(n));
      } else if (errno != EINTR) {
        return WithContext(ErrnoToStatus(errno, "cannot write file"),
                           {.uri = uri(), .offset = size_bytes()});
      }
    }
    return absl::OkStatus();
  }

 private:
  LocalOutputFile(std::string path, std::string temp, int fd)
      : OutputFile(std::move(path)), temp_(std::move(temp)), fd_(fd) {}
  std::string temp_;
  int fd_;
  bool committed_ = false;
};

class S3OutputFile final : public OutputFile {
 public:
  S3OutputFile(std::string uri, std::shared_ptr<const S3Client> client, S3Location location)
      : OutputFile(std::move(uri)),
        client_(std::move(client)),
        location_(std::move(location)),
        part_bytes_(std::max(client_->options().part_size_bytes, kMinPartBytes)) {}
  ~S3OutputFile() override { Abort(); }

  absl::Status Commit() override {
    if (upload_id_.empty()) {  // small: one PutObject
      SHARDLOADER_RETURN_IF_ERROR(client_->Call("PUT", location_, {}, std::move(buffer_)).status());
      done_ = true;
      return absl::OkStatus();
    }
    if (!buffer_.empty()) SHARDLOADER_RETURN_IF_ERROR(UploadPart());
    std::string body = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < etags_.size(); ++i) {
      absl::StrAppend(&body, "<Part><PartNumber>", i + 1, "</PartNumber><ETag>", etags_[i],
                      "</ETag></Part>");
    }
    absl::StrAppend(&body, "</CompleteMultipartUpload>");
    SHARDLOADER_ASSIGN_OR_RETURN(
        const HttpResponse response,
        client_->Call("POST", location_, {{"uploadId", upload_id_}}, body));
    // S3 may answer 200 with an error document when completion fails late.
    if (absl::StrContains(response.body, "<Error>")) {
      return WithContext(absl::UnavailableError("CompleteMultipartUpload failed"), {.uri = uri()});
    }
    done_ = true;
    return absl::OkStatus();
  }

  void Abort() override {
    if (done_) return;
    done_ = true;
    if (!upload_id_.empty()) {
      client_->Call("DELETE", location_, {{"uploadId", upload_id_}}).status().IgnoreError();
    }
  }

 protected:
  absl::Status Append(absl::string_view data) override {
    buffer_.append(data.data(), data.size());
    while (buffer_.size() >= part_bytes_) SHARDLOADER_RETURN_IF_ERROR(UploadPart());
    return absl::OkStatus();
  }

 private:
  absl::Status UploadPart() {
    if (upload_id_.empty()) {
      SHARDLOADER_ASSIGN_OR_RETURN(const HttpResponse created,
                                   client_->Call("POST", location_, {{"uploads", ""}}));
      const size_t begin = created.body.find("<UploadId>");
      const size_t end = created.body.find("</UploadId>");
      if (begin == std::string::npos || end == std::string::npos) {
        return WithContext(absl::UnavailableError("CreateMultipartUpload gave no UploadId"),
                           {.uri = uri()});
      }
      upload_id_ = created.body.substr(begin + 10, end - begin - 10);
    }
    const size_t n = std::min(buffer_.size(), part_bytes_);
    const QueryParams query = {{"partNumber", absl::StrCat(etags_.size() + 1)},
                               {"uploadId", upload_id_}};
    SHARDLOADER_ASSIGN_OR_RETURN(const HttpResponse response,
                                 client_->Call("PUT", location_, query, buffer_.substr(0, n)));
    const auto etag = response.headers.find("etag");
    if (etag == response.headers.end()) {
      return WithContext(absl::UnavailableError("UploadPart answer has no ETag"), {.uri = uri()});
    }
    etags_.push_back(etag->second);
    buffer_.erase(0, n);
    return absl::OkStatus();
  }

  std::shared_ptr<const S3Client> client_;
  S3Location location_;
  size_t part_bytes_;
  std::string buffer_;  // bytes not yet uploaded
  std::string upload_id_;
  std::vector<std::string> etags_;  // of parts 1..n
  bool done_ = false;
};

}  // namespace

absl::Status OutputFile::Write(absl::string_view data) {
  hasher_.Update(data);
  size_bytes_ += static_cast<int64_t>(data.size());
  return Append(data);
}

std::string OutputFile::Sha256HexDigest() { return absl::BytesToHexString(hasher_.Digest()); }

absl::StatusOr<std::unique_ptr<OutputFile>> CreateLocalOutputFile(const std::string& path) {
  return LocalOutputFile::Create(path);
}

absl::StatusOr<std::unique_ptr<OutputFile>> CreateS3OutputFile(
    const std::string& uri, const SourceOptions& options,
    std::shared_ptr<HttpTransport> transport) {
  SHARDLOADER_ASSIGN_OR_RETURN(S3Location location, ParseS3Uri(uri));
  absl::StatusOr<std::shared_ptr<const S3Client>> client =
      S3Client::Create(options, std::move(transport));
  if (!client.ok()) return WithContext(client.status(), {.uri = uri});
  return std::unique_ptr<OutputFile>(
      new S3OutputFile(uri, *std::move(client), std::move(location)));
}

}  // namespace shardloader

#include "shardloader/io/remote/remote_source.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "shardloader/io/remote/s3_client.h"
#include "shardloader/io/uri.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

// Fetches parts with `max_concurrency` threads, at most that many parts
// ahead of the reader, and returns them in order.
class ParallelRangeStream final : public ByteSource {
 public:
  ParallelRangeStream(std::shared_ptr<RemoteObject> object, const SourceOptions& options)
      : object_(std::move(object)),
        part_size_(static_cast<int64_t>(std::max<size_t>(options.part_size_bytes, 64 << 10))),
        num_parts_((object_->size() + part_size_ - 1) / part_size_),
        window_(std::max(options.max_concurrency, 1)) {}

  ~ParallelRangeStream() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    for (std::thread& worker : workers_) worker.join();
  }

  const std::string& uri() const override { return object_->uri(); }
  int64_t position() const override { return position_; }

  absl::StatusOr<size_t> Read(char* dst, size_t size) override {
    if (current_offset_ == current_.size()) {
      if (position_ == object_->size()) return 0;
      if (workers_.empty()) Start();
      SHARDLOADER_RETURN_IF_ERROR(TakeNextPart());
    }
    const size_t n = std::min(size, current_.size() - current_offset_);
    std::memcpy(dst, current_.data() + current_offset_, n);
    current_offset_ += n;
    position_ += static_cast<int64_t>(n);
    return n;
  }

 private:
  struct Part {
    std::vector<char> bytes;
    absl::Status status;
  };

  void Start() {
    const int threads = static_cast<int>(std::min<int64_t>(window_, num_parts_));
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }

  void Work() {
    while (true) {
      int64_t index = 0;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &ParallelRangeStream::WorkerMayProceed));
        if (stopping_ || next_fetch_ == num_parts_) return;
        index = next_fetch_++;
      }
      Part part;
      const int64_t offset = index * part_size_;
      part.bytes.resize(static_cast<size_t>(std::min(part_size_, object_->size() - offset)));
      part.status = object_->ReadRange(offset, part.bytes.size(), part.bytes.data());
      absl::MutexLock lock(&mu_);
      ready_[index] = std::move(part);
    }
  }

  bool WorkerMayProceed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || next_fetch_ == num_parts_ || next_fetch_ < next_part_ + window_;
  }
  bool NextPartReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ready_.contains(next_part_);
  }

  absl::Status TakeNextPart() {
    Part part;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &ParallelRangeStream::NextPartReady));
      part = std::move(ready_[next_part_]);
      ready_.erase(next_part_);
      ++next_part_;
    }
    SHARDLOADER_RETURN_IF_ERROR(part.status);
    current_ = std::move(part.bytes);
    current_offset_ = 0;
    return absl::OkStatus();
  }

  const std::shared_ptr<RemoteObject> object_;
  const int64_t part_size_;
  const int64_t num_parts_;
  const int64_t window_;
  std::vector<std::thread> workers_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_fetch_ ABSL_GUARDED_BY(mu_) = 0;  // next part a worker takes
  // Next part the reader takes: written by the reader under mu_.
  int64_t next_part_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int64_t, Part> ready_ ABSL_GUARDED_BY(mu_);
  std::vector<char> current_;  // the part being read
  size_t current_offset_ = 0;
  int64_t position_ = 0;
};

class RemoteRandomAccess final : public RandomAccessSource {
 public:
  explicit RemoteRandomAccess(std::shared_ptr<RemoteObject> object) : object_(std::move(object)) {}
  const std::string& uri() const override { return object_->uri(); }
  int64_t size() const override { return object_->size(); }
  absl::Status ReadAt(int64_t offset, size_t size, char* dst) const override {
    return object_->ReadRange(offset, size, dst);
  }

 private:
  const std::shared_ptr<RemoteObject> object_;
};

// S3Client::Create(), its errors naming `uri`.
absl::StatusOr<std::shared_ptr<const S3Client>> CreateS3Client(
    const std::string& uri, const SourceOptions& options,
    std::shared_ptr<HttpTransport> transport) {
  absl::StatusOr<std::shared_ptr<const S3Client>> client =
      S3Client::Create(options, std::move(transport));
  if (!client.ok()) return WithContext(client.status(), {.uri = uri});
  return client;
}

}  // namespace

absl::StatusOr<std::shared_ptr<RemoteObject>> OpenRemoteObject(
    const std::string& uri, const SourceOptions& options,
    std::shared_ptr<HttpTransport> transport) {
  if (absl::StartsWith(uri, "s3://")) {
    SHARDLOADER_ASSIGN_OR_RETURN(const S3Location location, ParseS3Uri(uri));
    SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<const S3Client> client,
                                 CreateS3Client(uri, options, std::move(transport)));
    return RemoteObject::Open(uri, client->ObjectTarget(location), options, client->transport());
  }
  return RemoteObject::Open(uri, RemoteTarget{.url = uri, .follow_redirects = true}, options,
                            std::move(transport));
}

std::unique_ptr<ByteSource> ParallelStreamOf(std::shared_ptr<RemoteObject> object,
                                             const SourceOptions& options) {
  return std::make_unique<ParallelRangeStream>(std::move(object), options);
}

std::shared_ptr<RandomAccessSource> RandomAccessOf(std::shared_ptr<RemoteObject> object) {
  return std::make_shared<RemoteRandomAccess>(std::move(object));
}

absl::StatusOr<std::vector<std::string>> ListS3Prefix(const std::string& uri,
                                                      const SourceOptions& options,
                                                      std::shared_ptr<HttpTransport> transport) {
  SHARDLOADER_ASSIGN_OR_RETURN(const S3Location location, ParseS3Uri(uri));
  SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<const S3Client> client,
                               CreateS3Client(uri, options, std::move(transport)));
  SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> keys,
                               client->ListKeys(location.bucket, location.key));
  for (std::string& key : keys) key = absl::StrCat("s3://", location.bucket, "/", key);
  return keys;
}

}  // namespace shardloader

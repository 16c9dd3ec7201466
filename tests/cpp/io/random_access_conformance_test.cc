// One conformance suite for every kind of RandomAccessSource (after Arrow's
// GenericFileSystemTest, arrow/filesystem/test_util.h): each kind is a
// factory that makes a source holding given bytes, or opens one that does not
// exist, and every kind must pass the same tests: size, ranges, zero-length
// reads, reads outside the source (DataLoss naming the URI, never a crash,
// also for sizes near INT64_MAX), NotFound, concurrent reads, and releasing
// what it holds when the last reference drops.
//
// Kinds: a local file read with pread(2), a memory-mapped local file, a pipe
// read whole into memory, a remote object (RandomAccessOf(RemoteObject))
// and a cached remote shard (OpenCachedShard), both through
// MockHttpTransport.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "io/remote/mock_http_transport.h"
#include "shardloader/io/cache/shard_cache.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/io/random_access.h"
#include "shardloader/io/remote/remote_source.h"
#include "shardloader/status.h"
#include "test_util.h"

namespace shardloader {
namespace {

using ::shardloader::testing::MockHttpTransport;
using ::shardloader::testing::TempDir;
using ::testing::HasSubstr;

using SourceOr = absl::StatusOr<std::shared_ptr<RandomAccessSource>>;

// Makes sources of one kind. Each test gets a fresh factory (and with it a
// fresh temporary directory and transport).
class SourceFactory {
 public:
  virtual ~SourceFactory() = default;
  // A source whose bytes are `bytes`.
  virtual SourceOr Make(const std::string& bytes) = 0;
  // Opens an object that does not exist.
  virtual absl::Status OpenMissing() = 0;
  // Whether an open source holds a resource Resources() counts.
  virtual bool HoldsResources() const = 0;
  // What the process holds that a source may hold too: open file
  // descriptors, and references to the factory's transport.
  std::vector<int64_t> Resources() const {
    int64_t fds = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/self/fd")) {
      ++fds;
    }
    return {fds, transport_.use_count()};
  }

 protected:
  // A new name for each source this factory makes.
  std::string NextName() { return absl::StrCat("shard-", next_++, ".tar"); }
  SourceOptions Options() const {
    SourceOptions options;
    options.initial_backoff = absl::Milliseconds(1);
    options.max_backoff = absl::Milliseconds(1);
    options.part_size_bytes = 64 << 10;
    return options;
  }

  TempDir dir_;
  std::shared_ptr<MockHttpTransport> transport_;  // remote kinds only

 private:
  int next_ = 0;
};

class LocalFactory final : public SourceFactory {
 public:
  explicit LocalFactory(bool memory_map) : memory_map_(memory_map) {}
  SourceOr Make(const std::string& bytes) override {
    const std::string path = dir_.Join(NextName());
    testing::WriteFile(path, bytes);
    SourceOptions options = Options();
    options.memory_map = memory_map_;
    SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessSource> source,
                                 OpenRandomAccess(path, options));
    // The kind under test is the one asked for.
    if (source->mapped().empty() == (memory_map_ && !bytes.empty())) {
      return absl::InternalError(absl::StrCat("memory_map=", memory_map_, " but mapped() has ",
                                              source->mapped().size(), " bytes"));
    }
    return source;
  }
  absl::Status OpenMissing() override {
    return OpenRandomAccess(dir_.Join("missing.tar"), Options()).status();
  }
  bool HoldsResources() const override { return true; }  // the file's fd

 private:
  bool memory_map_;
};

// A pipe, which cannot seek, is read whole into memory when opened.
class PipeFactory final : public SourceFactory {
 public:
  SourceOr Make(const std::string& bytes) override {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe2");
    ::fcntl(fds[1], F_SETPIPE_SZ, 256 << 10);  // holds the whole test shard
    const ssize_t written = ::write(fds[1], bytes.data(), bytes.size());
    ::close(fds[1]);
    if (written != static_cast<ssize_t>(bytes.size())) {
      ::close(fds[0]);
      return absl::InternalError("the test shard does not fit in the pipe");
    }
    // Opening the pipe again by its /proc name reads it as a FIFO would be.
    SourceOr source = OpenRandomAccess(absl::StrCat("/proc/self/fd/", fds[0]), Options());
    ::close(fds[0]);
    if (source.ok() && (*source)->mapped().size() != bytes.size()) {
      return absl::InternalError("a pipe should be held in memory");
    }
    return source;
  }
  absl::Status OpenMissing() override {
    return OpenRandomAccess(dir_.Join("missing.fifo"), Options()).status();
  }
  bool HoldsResources() const override { return false; }  // only memory
};

class RemoteFactory final : public SourceFactory {
 public:
  explicit RemoteFactory(bool cached) : cached_(cached) {
    transport_ = std::make_shared<MockHttpTransport>();
  }
  SourceOr Make(const std::string& bytes) override {
    const std::string url = absl::StrCat("http://mock.test/", NextName());
    transport_->PutObject(url, bytes);
    return Open(url);
  }
  absl::Status OpenMissing() override { return Open("http://mock.test/missing.tar").status(); }
  // Remote: the object holds the transport; cached: the cache file's fd.
  bool HoldsResources() const override { return true; }

 private:
  SourceOr Open(const std::string& url) {
    if (cached_) {
      SourceOptions options = Options();
      options.cache_dir = dir_.Join("cache");
      SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RandomAccessSource> source,
                                   OpenCachedShard(url, options, transport_));
      if (source->size() > 0 && source->mapped().empty()) {
        return absl::InternalError("a cached shard should be read from its local file");
      }
      return source;
    }
    SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<RemoteObject> object,
                                 OpenRemoteObject(url, Options(), transport_));
    return RandomAccessOf(std::move(object));
  }

  bool cached_;
};

struct SourceKind {
  std::string name;
  std::function<std::unique_ptr<SourceFactory>()> factory;
};
void PrintTo(const SourceKind& kind, std::ostream* os) { *os << kind.name; }

std::string Pattern(size_t size) {
  std::string bytes(size, '\0');
  std::minstd_rand generator(static_cast<unsigned>(size));
  for (char& byte : bytes) byte = static_cast<char>(generator());
  return bytes;
}

// One page of writable memory followed by an inaccessible page: a read that
// writes past the page faults (or fails with EFAULT) instead of silently
// corrupting the heap.
class GuardedBuffer {
 public:
  GuardedBuffer() {
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    void* memory =
        ::mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base_ = static_cast<char*>(memory);
    ::mprotect(base_ + page_, page_, PROT_NONE);
  }
  ~GuardedBuffer() { ::munmap(base_, 2 * page_); }
  char* data() { return base_; }
  size_t size() const { return page_; }

 private:
  size_t page_;
  char* base_;
};

constexpr size_t kShardBytes = 100000;  // more than one 64 KiB part

class RandomAccessConformanceTest : public ::testing::TestWithParam<SourceKind> {
 protected:
  void SetUp() override {
    factory_ = GetParam().factory();
    SourceOr source = factory_->Make(bytes_);
    ASSERT_TRUE(source.ok()) << source.status();
    source_ = *std::move(source);
  }

  // Reads `size` bytes at `offset` of source_, expecting success.
  std::string Read(int64_t offset, size_t size) const {
    std::string got(size, '\0');
    const absl::Status status = source_->ReadAt(offset, size, got.data());
    EXPECT_TRUE(status.ok()) << offset << "+" << size << ": " << status;
    return got;
  }

  // Whether `status` is DataLoss naming source_'s URI; explains if not.
  ::testing::AssertionResult IsPastEnd(const absl::Status& status) const {
    if (status.code() != absl::StatusCode::kDataLoss) {
      return ::testing::AssertionFailure() << "not DataLoss: " << status;
    }
    if (GetContext(status).uri != source_->uri() ||
        status.message().find(source_->uri()) == absl::string_view::npos) {
      return ::testing::AssertionFailure() << "does not name " << source_->uri() << ": " << status;
    }
    return ::testing::AssertionSuccess();
  }

  std::unique_ptr<SourceFactory> factory_;
  const std::string bytes_ = Pattern(kShardBytes);
  std::shared_ptr<RandomAccessSource> source_;
};

TEST_P(RandomAccessConformanceTest, SizeIsTheNumberOfBytes) {
  EXPECT_EQ(source_->size(), static_cast<int64_t>(kShardBytes));
  for (const size_t size : {size_t{0}, size_t{1}, size_t{4097}}) {
    SourceOr source = factory_->Make(Pattern(size));
    ASSERT_TRUE(source.ok()) << source.status();
    EXPECT_EQ((*source)->size(), static_cast<int64_t>(size));
  }
}

TEST_P(RandomAccessConformanceTest, ReadsRangesAtTheStartMiddleAndEnd) {
  EXPECT_EQ(Read(0, 100), bytes_.substr(0, 100));
  EXPECT_EQ(Read(40000, 30000), bytes_.substr(40000, 30000));
  EXPECT_EQ(Read(kShardBytes - 100, 100), bytes_.substr(kShardBytes - 100));
  EXPECT_EQ(Read(kShardBytes - 1, 1), bytes_.substr(kShardBytes - 1));
  EXPECT_TRUE(Read(0, kShardBytes) == bytes_);
}

TEST_P(RandomAccessConformanceTest, ZeroLengthReadsInsideOrAtTheEndSucceed) {
  for (const int64_t offset : {int64_t{0}, int64_t{5000}, static_cast<int64_t>(kShardBytes)}) {
    char unused = 'x';
    EXPECT_TRUE(source_->ReadAt(offset, 0, &unused).ok()) << offset;
    EXPECT_EQ(unused, 'x');
  }
  SourceOr empty = factory_->Make("");
  ASSERT_TRUE(empty.ok()) << empty.status();
  char unused;
  EXPECT_TRUE((*empty)->ReadAt(0, 0, &unused).ok());
}

TEST_P(RandomAccessConformanceTest, ReadsOutsideTheSourceAreDataLossNamingTheUri) {
  GuardedBuffer buffer;
  const int64_t end = static_cast<int64_t>(kShardBytes);
  for (const auto& [offset, size] : std::vector<std::pair<int64_t, size_t>>{
           {end + 1, 1}, {end, 1}, {end - 10, 20}, {-1, 10}, {-100, 1}}) {
    EXPECT_TRUE(IsPastEnd(source_->ReadAt(offset, size, buffer.data()))) << offset << "+" << size;
  }
  SourceOr empty = factory_->Make("");
  ASSERT_TRUE(empty.ok()) << empty.status();
  const absl::Status status = (*empty)->ReadAt(0, 1, buffer.data());
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
}

// Offsets and sizes whose sum overflows int64_t: a range check that forms
// offset + size lets these through, and the source then reads (or views)
// far past its end.
std::vector<std::pair<int64_t, size_t>> OverflowingRanges() {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return {{1, static_cast<size_t>(kMax)},
          {static_cast<int64_t>(kShardBytes / 2), static_cast<size_t>(kMax)},
          {static_cast<int64_t>(kShardBytes / 2), std::numeric_limits<size_t>::max()},
          {kMax, 1}};
}

// Runs `check` on each overflowing range in a forked child process (so a
// crash fails this test, not the whole binary); the child prints what
// failed and exits without running destructors, so the parent's temporary
// files stay the parent's to remove.
void ExpectAllInChild(
    std::function<::testing::AssertionResult(int64_t offset, size_t size)> check) {
  GTEST_FLAG_SET(death_test_style, "fast");
  const auto run = [&] {
    bool ok = true;
    for (const auto& [offset, size] : OverflowingRanges()) {
      const ::testing::AssertionResult result = check(offset, size);
      if (!result) {
        std::fprintf(stderr, "(%lld, %zu): %s\n", static_cast<long long>(offset), size,
                     result.message());
      }
      ok = ok && result;
    }
    std::fflush(stderr);
    std::_Exit(ok ? 0 : 1);
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "");
}

TEST_P(RandomAccessConformanceTest, ReadAtWithAHugeSizeIsDataLossNotACrash) {
  GuardedBuffer buffer;
  ExpectAllInChild([&](int64_t offset, size_t size) {
    return IsPastEnd(source_->ReadAt(offset, size, buffer.data()));
  });
}

TEST_P(RandomAccessConformanceTest, ViewAtWithAHugeSizeIsDataLossNotACrash) {
  if (source_->mapped().empty()) GTEST_SKIP() << "no views: the bytes are not in memory";
  ExpectAllInChild([&](int64_t offset, size_t size) {
    return IsPastEnd(source_->ViewAt(offset, size).status());
  });
}

TEST_P(RandomAccessConformanceTest, MissingObjectIsNotFoundNamingIt) {
  const absl::Status status = factory_->OpenMissing();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(GetContext(status).uri, HasSubstr("missing"));
}

TEST_P(RandomAccessConformanceTest, ConcurrentReadsFromEightThreadsGetTheirBytes) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::minstd_rand generator(t + 1);
      std::string got;
      for (int i = 0; i < 50; ++i) {
        const size_t offset = generator() % kShardBytes;
        const size_t size = std::min<size_t>(generator() % 9000, kShardBytes - offset);
        got.assign(size, '\0');
        const absl::Status status = source_->ReadAt(static_cast<int64_t>(offset), size, got.data());
        if (!status.ok() || got != bytes_.substr(offset, size)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(RandomAccessConformanceTest, StreamOfReadsEveryByteInOrder) {
  std::unique_ptr<ByteSource> stream = StreamOf(source_, 4096);
  absl::StatusOr<std::string> got = testing::ReadBytes(*stream, kShardBytes);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == bytes_);
  char extra;
  EXPECT_EQ(*stream->Read(&extra, 1), 0u);
}

TEST_P(RandomAccessConformanceTest, ReleasesWhatItHoldsWhenTheLastReferenceDrops) {
  source_.reset();
  const std::vector<int64_t> before = factory_->Resources();
  SourceOr source = factory_->Make(bytes_);
  ASSERT_TRUE(source.ok()) << source.status();
  std::shared_ptr<RandomAccessSource> copy = *source;
  if (factory_->HoldsResources()) {
    EXPECT_NE(factory_->Resources(), before);  // else this test proves nothing
  } else {
    EXPECT_EQ(factory_->Resources(), before);
  }
  source->reset();  // `copy` still reads
  char byte;
  ASSERT_TRUE(copy->ReadAt(7, 1, &byte).ok());
  EXPECT_EQ(byte, bytes_[7]);
  copy.reset();
  EXPECT_EQ(factory_->Resources(), before);
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, RandomAccessConformanceTest,
    ::testing::Values(
        SourceKind{"LocalPread", [] { return std::make_unique<LocalFactory>(false); }},
        SourceKind{"LocalMapped", [] { return std::make_unique<LocalFactory>(true); }},
        SourceKind{"Pipe", [] { return std::make_unique<PipeFactory>(); }},
        SourceKind{"Remote", [] { return std::make_unique<RemoteFactory>(false); }},
        SourceKind{"Cached", [] { return std::make_unique<RemoteFactory>(true); }}),
    [](const ::testing::TestParamInfo<SourceKind>& info) { return info.param.name; });

}  // namespace
}  // namespace shardloader

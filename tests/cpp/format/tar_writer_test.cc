#include "shardloader/format/tar_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardloader/format/tar_reader.h"
#include "shardloader/io/memory_source.h"

namespace shardloader {
namespace {

using ::testing::HasSubstr;

// Collects what a TarWriter writes, and the size of each write.
class StringSink final : public ByteSink {
 public:
  StringSink(std::string* bytes, std::vector<size_t>* write_sizes)
      : bytes_(bytes), write_sizes_(write_sizes) {}

  absl::Status Write(absl::string_view data) override {
    bytes_->append(data.data(), data.size());
    if (write_sizes_ != nullptr) write_sizes_->push_back(data.size());
    return absl::OkStatus();
  }

 private:
  std::string* bytes_;
  std::vector<size_t>* write_sizes_;
};

// Keeps the first `limit` bytes written and counts the rest, without
// touching them.
class PrefixSink final : public ByteSink {
 public:
  PrefixSink(size_t limit, std::string* prefix, int64_t* total)
      : limit_(limit), prefix_(prefix), total_(total) {}

  absl::Status Write(absl::string_view data) override {
    const size_t keep = std::min(data.size(), limit_ - prefix_->size());
    prefix_->append(data.data(), keep);
    *total_ += static_cast<int64_t>(data.size());
    return absl::OkStatus();
  }

 private:
  size_t limit_;
  std::string* prefix_;
  int64_t* total_;
};

// The standard output of the shell command `command`, or nullopt if it
// failed.
std::optional<std::string> RunCommand(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output.append(buffer, n);
  }
  if (::pclose(pipe) != 0) return std::nullopt;
  return output;
}

bool HasPython() { return RunCommand("python3 -c 'import tarfile' 2>/dev/null").has_value(); }

std::string TempPath(absl::string_view name) {
  return absl::StrCat(::testing::TempDir(), "tar_writer_test_", ::getpid(), "_", name);
}

struct File {
  std::string name;
  std::string data;
};

std::string Pattern(size_t size) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>(i % 251);
  return data;
}

std::vector<File> SampleFiles() {
  std::string name_300;  // 300 bytes with slashes: too long for the prefix
  while (name_300.size() < 300) name_300 += "directory/";
  name_300.resize(296);
  name_300 += ".bin";
  return {
      {"000001.jpg", "jpeg bytes"},
      {"empty.txt", ""},
      {name_300, "three hundred"},
      {std::string(300, 'n'), "no slash"},
      {std::string(100, 'a'), "exactly 100"},
      // 101 to 256 bytes with a slash: ustar prefix and name.
      {std::string(120, 'p') + "/" + std::string(90, 's'), "prefix"},
      {"ünïcödé/файл.txt", "utf-8"},
      {std::string("not-utf8-\x80\xff.bin"), "binary name"},
      {"block.bin", Pattern(512)},
      {"block-and-one.bin", Pattern(513)},
      {"big.bin", Pattern(3 << 20)},  // past the buffer: written directly
  };
}

std::string WriteToString(const std::vector<File>& files, const TarWriterOptions& options = {},
                          std::vector<size_t>* write_sizes = nullptr) {
  std::string bytes;
  absl::StatusOr<std::unique_ptr<TarWriter>> writer =
      TarWriter::Create(std::make_unique<StringSink>(&bytes, write_sizes), options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  if (!writer.ok()) return "";
  for (const File& file : files) {
    EXPECT_TRUE((*writer)->AddFile(file.name, file.data).ok()) << file.name;
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ((*writer)->bytes_written(), static_cast<int64_t>(bytes.size()));
  return bytes;
}

std::vector<File> ReadWithTarReader(const std::string& bytes) {
  MemorySource source("memory.tar", bytes);
  TarReader reader(&source);
  std::vector<File> files;
  while (true) {
    absl::StatusOr<std::optional<TarMember>> member = reader.Next();
    EXPECT_TRUE(member.ok()) << member.status();
    if (!member.ok() || !member->has_value()) break;
    EXPECT_EQ((*member)->type, TarEntryType::kRegular);
    File file;
    file.name = (*member)->name;
    EXPECT_TRUE(reader.ReadData(&file.data).ok());
    files.push_back(std::move(file));
  }
  return files;
}

void ExpectSameFiles(const std::vector<File>& actual, const std::vector<File>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_TRUE(actual[i].data == expected[i].data) << expected[i].name;
  }
}

TEST(TarWriterTest, RoundTripsThroughTarReader) {
  const std::vector<File> files = SampleFiles();
  const std::string bytes = WriteToString(files);
  EXPECT_EQ(bytes.size() % 512, 0u);
  ExpectSameFiles(ReadWithTarReader(bytes), files);
}

TEST(TarWriterTest, IsDeterministic) {
  const std::vector<File> files = SampleFiles();
  EXPECT_TRUE(WriteToString(files) == WriteToString(files));
}

TEST(TarWriterTest, WritesUstarHeaders) {
  TarWriterOptions options;
  options.mtime_seconds = 1000;
  const std::string bytes = WriteToString({{"a.txt", "hello"}}, options);
  ASSERT_EQ(bytes.size(), 512u + 512 + 1024);
  const absl::string_view header(bytes.data(), 512);
  EXPECT_EQ(header.substr(0, 6), absl::string_view("a.txt\0", 6));
  EXPECT_EQ(header.substr(100, 8), absl::string_view("0000644\0", 8));
  EXPECT_EQ(header.substr(108, 8), absl::string_view("0000000\0", 8));
  EXPECT_EQ(header.substr(116, 8), absl::string_view("0000000\0", 8));
  EXPECT_EQ(header.substr(124, 12), absl::string_view("00000000005\0", 12));
  EXPECT_EQ(header.substr(136, 12), absl::string_view("00000001750\0", 12));
  EXPECT_EQ(header[156], '0');
  EXPECT_EQ(header.substr(257, 8), absl::string_view("ustar\0"
                                                     "00",
                                                     8));
  EXPECT_EQ(header.substr(265, 64), std::string(64, '\0'));  // uname, gname
  int64_t sum = 0;
  for (size_t i = 0; i < 512; ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
  }
  char checksum[9];
  std::snprintf(checksum, sizeof(checksum), "%06llo", static_cast<unsigned long long>(sum));
  EXPECT_EQ(header.substr(148, 8), absl::StrCat(checksum, std::string("\0 ", 2)));
  EXPECT_EQ(bytes.substr(512, 5), "hello");
  EXPECT_EQ(bytes.substr(517), std::string(512 - 5 + 1024, '\0'));
}

TEST(TarWriterTest, UsesPaxOnlyWhenUstarCannotHoldTheName) {
  auto first_typeflag = [](const std::string& name) { return WriteToString({{name, "x"}})[156]; };
  EXPECT_EQ(first_typeflag(std::string(100, 'a')), '0');
  EXPECT_EQ(first_typeflag(std::string(150, 'p') + "/name"), '0');
  EXPECT_EQ(first_typeflag(std::string(101, 'a')), 'x');
  EXPECT_EQ(first_typeflag(std::string(156, 'p') + "/name"), 'x');
  EXPECT_EQ(first_typeflag("ünïcödé"), 'x');

  const std::string pax = WriteToString({{std::string(300, 'n'), "x"}});
  EXPECT_THAT(pax.substr(512, 512), HasSubstr("310 path=nnnn"));
  const std::string binary = WriteToString({{"bad-\xff", "x"}});
  EXPECT_THAT(binary.substr(512, 512), HasSubstr("21 hdrcharset=BINARY\n14 path=bad-\xff\n"));
}

TEST(TarWriterTest, SizesOf8GiBAndMoreGetAPaxSizeRecord) {
  // 8 GiB + 1 of untouched, unreserved zero pages.
  const size_t size = (size_t{8} << 30) + 1;
  void* pages =
      ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (pages == MAP_FAILED) GTEST_SKIP() << "cannot map 8 GiB of address space";
  std::string prefix;
  int64_t total = 0;
  absl::StatusOr<std::unique_ptr<TarWriter>> writer =
      TarWriter::Create(std::make_unique<PrefixSink>(4096, &prefix, &total));
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)
                  ->AddFile("huge.bin", absl::string_view(static_cast<const char*>(pages), size))
                  .ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  ::munmap(pages, size);
  EXPECT_EQ(total, (*writer)->bytes_written());
  EXPECT_EQ(total, 3 * 512 + static_cast<int64_t>(size) + 511 + 1024);
  EXPECT_EQ(prefix[156], 'x');
  EXPECT_THAT(prefix.substr(512, 512), HasSubstr("19 size=8589934593\n"));

  MemorySource source("huge.tar", prefix);
  TarReader reader(&source);
  absl::StatusOr<std::optional<TarMember>> member = reader.Next();
  ASSERT_TRUE(member.ok()) << member.status();
  ASSERT_TRUE(member->has_value());
  EXPECT_EQ((*member)->name, "huge.bin");
  EXPECT_EQ((*member)->size, static_cast<int64_t>(size));

  if (!HasPython()) GTEST_SKIP() << "python3 not found";
  const std::string path = TempPath("huge.tar");
  FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fwrite(prefix.data(), 1, prefix.size(), file), prefix.size());
  ASSERT_EQ(std::fclose(file), 0);
  // Only the first member: the data is not there.
  const std::optional<std::string> output = RunCommand(
      "python3 -c 'import sys, tarfile\n"
      "m = tarfile.open(sys.argv[1]).next()\n"
      "print(m.name, m.size)' " +
      path);
  std::remove(path.c_str());
  ASSERT_TRUE(output.has_value());
  EXPECT_EQ(*output, "huge.bin 8589934593\n");
}

TEST(TarWriterTest, BuffersIntoLargeWrites) {
  TarWriterOptions options;
  options.buffer_size_bytes = 4096;
  std::vector<File> files;
  for (int i = 0; i < 100; ++i) {
    files.push_back({absl::StrCat(i, ".txt"), std::string(i * 7, 'x')});
  }
  files.push_back({"large.bin", Pattern(10000)});
  std::vector<size_t> write_sizes;
  const std::string bytes = WriteToString(files, options, &write_sizes);
  ASSERT_GE(write_sizes.size(), 2u);
  for (size_t i = 0; i + 1 < write_sizes.size(); ++i) {
    EXPECT_GE(write_sizes[i], options.buffer_size_bytes) << i;
  }
  ExpectSameFiles(ReadWithTarReader(bytes), files);
}

TEST(TarWriterTest, RejectsBadArgumentsAndMisuse) {
  EXPECT_EQ(TarWriter::Create(-1, "bad").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TarWriter::Create(nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  std::string bytes;
  TarWriterOptions options;
  options.mtime_seconds = -1;
  EXPECT_EQ(
      TarWriter::Create(std::make_unique<StringSink>(&bytes, nullptr), options).status().code(),
      absl::StatusCode::kInvalidArgument);
  options.mtime_seconds = int64_t{1} << 33;
  EXPECT_EQ(
      TarWriter::Create(std::make_unique<StringSink>(&bytes, nullptr), options).status().code(),
      absl::StatusCode::kInvalidArgument);
  options.mtime_seconds = 0;
  options.buffer_size_bytes = 0;
  EXPECT_EQ(
      TarWriter::Create(std::make_unique<StringSink>(&bytes, nullptr), options).status().code(),
      absl::StatusCode::kInvalidArgument);

  absl::StatusOr<std::unique_ptr<TarWriter>> writer =
      TarWriter::Create(std::make_unique<StringSink>(&bytes, nullptr));
  ASSERT_TRUE(writer.ok());
  for (const std::string& name : {std::string(), std::string("a\0b", 3), std::string(65537, 'n')}) {
    EXPECT_EQ((*writer)->AddFile(name, "data").code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ((*writer)->bytes_written(), 0);
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ((*writer)->AddFile("late", "").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*writer)->Finish().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(bytes, std::string(1024, '\0'));
}

TEST(TarWriterTest, SinkErrorsNameTheFileAndAreSticky) {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  absl::StatusOr<std::unique_ptr<TarWriter>> writer = TarWriter::Create(fd, "read-only.tar");
  ASSERT_TRUE(writer.ok());
  EXPECT_TRUE((*writer)->AddFile("a", "buffered").ok());
  const absl::Status error = (*writer)->Finish();
  EXPECT_FALSE(error.ok());
  EXPECT_THAT(std::string(error.message()), HasSubstr("read-only.tar"));
  EXPECT_EQ((*writer)->AddFile("b", ""), error);
  EXPECT_EQ((*writer)->Finish(), error);
  ::close(fd);  // the writer does not own it
}

// ---------------------------------------------------------------------------
// Other implementations read what TarWriter writes.

class TarWriterToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempPath("tools.tar");
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    absl::StatusOr<std::unique_ptr<TarWriter>> writer = TarWriter::Create(fd, path_);
    ASSERT_TRUE(writer.ok());
    for (const File& file : files_) {
      ASSERT_TRUE((*writer)->AddFile(file.name, file.data).ok());
    }
    ASSERT_TRUE((*writer)->Finish().ok());
    ASSERT_EQ(::close(fd), 0);
  }

  void TearDown() override { std::remove(path_.c_str()); }

  // Small files only: the tools' output holds their data in hex.
  const std::vector<File> files_ = [] {
    std::vector<File> files = SampleFiles();
    files.pop_back();  // big.bin
    return files;
  }();
  std::string path_;
};

TEST_F(TarWriterToolsTest, GnuTarListsAndExtracts) {
  if (!RunCommand("tar --version >/dev/null 2>&1").has_value()) {
    GTEST_SKIP() << "GNU tar not found";
  }
  const std::optional<std::string> listing =
      RunCommand("LC_ALL=C.UTF-8 tar --quoting-style=literal -tf " + path_ + " 2>/dev/null");
  ASSERT_TRUE(listing.has_value());
  std::string expected_listing;
  std::string expected_data;
  for (const File& file : files_) {
    absl::StrAppend(&expected_listing, file.name, "\n");
    absl::StrAppend(&expected_data, file.data);
  }
  EXPECT_EQ(*listing, expected_listing);
  const std::optional<std::string> data =
      RunCommand("LC_ALL=C.UTF-8 tar -xOf " + path_ + " 2>/dev/null");
  ASSERT_TRUE(data.has_value());
  EXPECT_TRUE(*data == expected_data);
}

TEST_F(TarWriterToolsTest, PythonTarfileReads) {
  if (!HasPython()) GTEST_SKIP() << "python3 not found";
  const std::optional<std::string> output = RunCommand(
      "python3 -c 'import os, sys, tarfile\n"
      "with tarfile.open(sys.argv[1]) as archive:\n"
      "    for m in archive:\n"
      "        data = archive.extractfile(m).read()\n"
      "        print(os.fsencode(m.name).hex(), m.type.decode(), m.size,\n"
      "              m.mode, m.uid, m.gid, repr(m.uname), repr(m.gname),\n"
      "              m.mtime, data.hex())' " +
      path_);
  ASSERT_TRUE(output.has_value());
  std::string expected;
  for (const File& file : files_) {
    absl::StrAppend(&expected, absl::BytesToHexString(file.name), " 0 ", file.data.size(),
                    " 420 0 0 '' '' 0 ", absl::BytesToHexString(file.data), "\n");
  }
  EXPECT_EQ(*output, expected);
}

}  // namespace
}  // namespace shardloader

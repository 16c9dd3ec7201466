#include "shardloader/format/tar_reader.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardloader/io/local/local_file.h"
#include "shardloader/io/memory_source.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

using ::testing::HasSubstr;

// Go's archive/tar and CPython's tarfile test vectors (see the README of the
// shared data folder).
std::string TarDir() { return std::string(SHARDLOADER_SHARED_DATA_DIR) + "/edge/tar"; }

#define SKIP_WITHOUT_SHARED_DATA()                                \
  if (!std::filesystem::is_directory(TarDir())) {                 \
    GTEST_SKIP() << "shared test data not found at " << TarDir(); \
  }

std::string FileBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

struct ReadResult {
  std::vector<TarMember> members;  // every member Next() returned
  std::vector<std::string> data;   // the data of each member read in full
  absl::Status status;             // the first error, if any
};

// Reads a whole archive, with ReadData() for every member or, if
// `read_data` is false, skipping all data. Fails the test (rather than hang)
// if the reader returns more members than the archive has blocks.
ReadResult ReadAll(ByteSource* source, int64_t archive_size, bool read_data = true) {
  ReadResult result;
  TarReader reader(source);
  const int64_t max_members = archive_size / 512 + 1;
  while (true) {
    absl::StatusOr<std::optional<TarMember>> member = reader.Next();
    if (!member.ok()) {
      result.status = member.status();
      break;
    }
    if (!member->has_value()) break;
    result.members.push_back(**member);
    if (static_cast<int64_t>(result.members.size()) > max_members) {
      ADD_FAILURE() << "more members than blocks: the reader loops";
      break;
    }
    if (read_data) {
      std::string data;
      result.status = reader.ReadData(&data);
      if (!result.status.ok()) break;
      result.data.push_back(std::move(data));
    }
  }
  return result;
}

ReadResult ReadBytes(const std::string& bytes, bool read_data = true) {
  MemorySource source("memory.tar", bytes);
  return ReadAll(&source, static_cast<int64_t>(bytes.size()), read_data);
}

ReadResult ReadVector(const std::string& relative_path) {
  const std::string path = TarDir() + "/" + relative_path;
  absl::StatusOr<std::unique_ptr<LocalFileSource>> source = LocalFileSource::Open(path);
  if (!source.ok()) {
    ADD_FAILURE() << source.status();
    return {};
  }
  return ReadAll(source->get(), (*source)->size_bytes());
}

std::vector<std::string> Names(const ReadResult& result) {
  std::vector<std::string> names;
  for (const TarMember& member : result.members) names.push_back(member.name);
  return names;
}

// ---------------------------------------------------------------------------
// Every vector of the README's table, and the others Go tests.

struct GoodVector {
  const char* path;
  int num_members;
};

class TarReaderGoodVectorTest : public ::testing::TestWithParam<GoodVector> {};

TEST_P(TarReaderGoodVectorTest, ReadsWithoutError) {
  SKIP_WITHOUT_SHARED_DATA();
  const ReadResult result = ReadVector(GetParam().path);
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.members.size(), static_cast<size_t>(GetParam().num_members));
  for (size_t i = 0; i < result.data.size(); ++i) {
    EXPECT_EQ(result.data[i].size(), static_cast<size_t>(result.members[i].size));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Vectors, TarReaderGoodVectorTest,
    ::testing::Values(
        // "read without error" in the README.
        GoodVector{"go/gnu.tar", 2}, GoodVector{"go/v7.tar", 2}, GoodVector{"go/star.tar", 2},
        GoodVector{"go/ustar.tar", 1}, GoodVector{"go/pax.tar", 2}, GoodVector{"go/xattrs.tar", 2},
        GoodVector{"go/hardlink.tar", 2}, GoodVector{"go/file-and-dir.tar", 2},
        GoodVector{"go/trailing-slash.tar", 1}, GoodVector{"go/gnu-long-nul.tar", 1},
        GoodVector{"go/gnu-utf8.tar", 1}, GoodVector{"go/gnu-not-utf8.tar", 1},
        GoodVector{"go/gnu-multi-hdrs.tar", 1}, GoodVector{"go/pax-multi-hdrs.tar", 1},
        GoodVector{"go/pax-records.tar", 1}, GoodVector{"go/pax-global-records.tar", 4},
        GoodVector{"go/pax-pos-size-file.tar", 1}, GoodVector{"go/nil-uid.tar", 1},
        GoodVector{"go/invalid-go17.tar", 1}, GoodVector{"go/ustar-file-devs.tar", 1},
        GoodVector{"go/sparse-formats.tar", 5}, GoodVector{"go/gnu-incremental.tar", 3},
        // Not in the README; Go reads them without error.
        GoodVector{"go/ustar-file-reg.tar", 1}, GoodVector{"go/writer.tar", 3},
        GoodVector{"go/hdr-only.tar", 16}, GoodVector{"go/gnu-sparse-big.tar", 1},
        GoodVector{"go/pax-sparse-big.tar", 1}, GoodVector{"go/gnu-nil-sparse-data.tar", 1},
        GoodVector{"go/gnu-nil-sparse-hole.tar", 1}, GoodVector{"go/pax-nil-sparse-data.tar", 1},
        GoodVector{"go/pax-nil-sparse-hole.tar", 1},
        // A PAX header and then the end of the stream: Go's
        // TestReadTruncation calls it a valid archive without members.
        GoodVector{"go/pax-path-hdr.tar", 0}, GoodVector{"cpython/testtar.tar", 39}));

struct BadVector {
  const char* path;
  int64_t error_offset;  // of the offending header
};

class TarReaderBadVectorTest : public ::testing::TestWithParam<BadVector> {};

TEST_P(TarReaderBadVectorTest, IsRejectedWithShardAndOffset) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string path = TarDir() + "/" + GetParam().path;
  const ReadResult result = ReadVector(GetParam().path);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kDataLoss) << result.status;
  EXPECT_THAT(std::string(result.status.message()),
              HasSubstr(absl::StrCat("shard ", path, ", offset ", GetParam().error_offset)));
  const ErrorContext context = GetContext(result.status);
  EXPECT_EQ(context.uri, path);
  EXPECT_EQ(context.offset, GetParam().error_offset);
}

INSTANTIATE_TEST_SUITE_P(
    Vectors, TarReaderBadVectorTest,
    ::testing::Values(
        // "rejected" in the README.
        BadVector{"go/pax-bad-hdr-file.tar", 0}, BadVector{"go/pax-bad-mtime-file.tar", 0},
        BadVector{"go/pax-nul-xattrs.tar", 0}, BadVector{"go/pax-nul-path.tar", 0},
        BadVector{"go/neg-size.tar", 0}, BadVector{"go/issue10968.tar", 0},
        BadVector{"go/issue11169.tar", 0}, BadVector{"go/issue12435.tar", 0},
        // A PAX global header whose only record, "0", is malformed.
        BadVector{"cpython/recursion.tar", 0},
        // Go's writer tests keep only the headers of 16 GiB files: the data
        // is missing.
        BadVector{"go/writer-big.tar", 0}, BadVector{"go/writer-big-long.tar", 0}));

// ---------------------------------------------------------------------------
// Members, as Go's reader_test.go expects them.

TEST(TarReaderTest, GnuV7StarUstarHaveTheSmallFiles) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string small = FileBytes(TarDir() + "/go/small.txt");
  const std::string small2 = FileBytes(TarDir() + "/go/small2.txt");
  ASSERT_EQ(small, "Kilts");
  ASSERT_EQ(small2, "Google.com\n");
  for (const char* path : {"go/gnu.tar", "go/v7.tar", "go/star.tar", "go/xattrs.tar"}) {
    SCOPED_TRACE(path);
    const ReadResult result = ReadVector(path);
    ASSERT_TRUE(result.status.ok()) << result.status;
    ASSERT_EQ(Names(result), (std::vector<std::string>{"small.txt", "small2.txt"}));
    EXPECT_EQ(result.members[0].type, TarEntryType::kRegular);
    EXPECT_EQ(result.members[0].size, 5);
    EXPECT_EQ(result.data[0], small);
    EXPECT_EQ(result.members[1].size, 11);
    EXPECT_EQ(result.data[1], small2);
  }
}

TEST(TarReaderTest, ReportsOffsets) {
  SKIP_WITHOUT_SHARED_DATA();
  const ReadResult result = ReadVector("go/gnu.tar");
  ASSERT_EQ(result.members.size(), 2u);
  EXPECT_EQ(result.members[0].header_offset, 0);
  EXPECT_EQ(result.members[0].data_offset, 512);
  EXPECT_EQ(result.members[1].header_offset, 1024);
  EXPECT_EQ(result.members[1].data_offset, 1536);

  // The offset of a member with extension headers is that of the first.
  const ReadResult pax = ReadVector("go/pax.tar");
  ASSERT_EQ(pax.members.size(), 2u);
  EXPECT_EQ(pax.members[0].header_offset, 0);
  EXPECT_EQ(pax.members[0].data_offset, 1536);
}

TEST(TarReaderTest, PaxLongNamesAndLinks) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string long_name =
      "123456789101112131415161718192021222324252627282930313233343536373839"
      "404142434445464748495051525354555657585960616263646566676869707172737"
      "475767778798081828384858687888990919293949596979899100";
  const ReadResult result = ReadVector("go/pax.tar");
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(result.members.size(), 2u);
  EXPECT_EQ(result.members[0].name, "a/" + long_name);
  EXPECT_EQ(result.members[0].type, TarEntryType::kRegular);
  EXPECT_EQ(result.members[0].size, 7);
  EXPECT_EQ(result.members[1].name, "a/b");
  EXPECT_EQ(result.members[1].type, TarEntryType::kSymlink);
  EXPECT_EQ(result.members[1].link_name, long_name);
}

TEST(TarReaderTest, UstarPrefix) {
  SKIP_WITHOUT_SHARED_DATA();
  std::string name;
  for (int i = 0; i < 15; ++i) name += "longname/";
  EXPECT_EQ(Names(ReadVector("go/ustar.tar")), std::vector<std::string>{name + "file.txt"});
  // A pre-Go 1.8 writer put a ustar prefix into a GNU header.
  EXPECT_EQ(Names(ReadVector("go/invalid-go17.tar")),
            std::vector<std::string>{std::string(97, 'a') + "/foo"});
}

TEST(TarReaderTest, MultipleExtensionHeadersTheLastWins) {
  SKIP_WITHOUT_SHARED_DATA();
  // As GNU, BSD and STAR tar.
  const ReadResult gnu = ReadVector("go/gnu-multi-hdrs.tar");
  ASSERT_EQ(gnu.members.size(), 1u);
  EXPECT_EQ(gnu.members[0].name, "GNU2/GNU2/long-path-name");
  EXPECT_EQ(gnu.members[0].link_name, "GNU4/GNU4/long-linkpath-name");
  EXPECT_EQ(gnu.members[0].type, TarEntryType::kSymlink);
  EXPECT_EQ(gnu.members[0].header_offset, 0);
  const ReadResult pax = ReadVector("go/pax-multi-hdrs.tar");
  ASSERT_EQ(pax.members.size(), 1u);
  EXPECT_EQ(pax.members[0].name, "bar");
  EXPECT_EQ(pax.members[0].link_name, "PAX4/PAX4/long-linkpath-name");
}

TEST(TarReaderTest, GnuLongNames) {
  SKIP_WITHOUT_SHARED_DATA();
  // Long names are C strings: cut at the first NUL.
  EXPECT_EQ(Names(ReadVector("go/gnu-long-nul.tar")), std::vector<std::string>{"0123456789"});
  std::string smileys;
  for (int i = 0; i < 18; ++i) smileys += "☺☻☹";
  EXPECT_EQ(Names(ReadVector("go/gnu-utf8.tar")), std::vector<std::string>{smileys});
  EXPECT_EQ(Names(ReadVector("go/gnu-not-utf8.tar")), std::vector<std::string>{"hi\x80\x81\x82\x83"
                                                                               "bye"});
}

TEST(TarReaderTest, LinksDirectoriesAndHeaderOnlyTypes) {
  SKIP_WITHOUT_SHARED_DATA();
  const ReadResult hardlink = ReadVector("go/hardlink.tar");
  ASSERT_EQ(hardlink.members.size(), 2u);
  EXPECT_EQ(hardlink.members[0].name, "file.txt");
  EXPECT_EQ(hardlink.data[0].size(), 15u);
  EXPECT_EQ(hardlink.members[1].name, "hard.txt");
  EXPECT_EQ(hardlink.members[1].type, TarEntryType::kHardLink);
  EXPECT_EQ(hardlink.members[1].link_name, "file.txt");

  const ReadResult file_and_dir = ReadVector("go/file-and-dir.tar");
  ASSERT_EQ(file_and_dir.members.size(), 2u);
  EXPECT_EQ(file_and_dir.members[1].name, "dir/");
  EXPECT_EQ(file_and_dir.members[1].type, TarEntryType::kDirectory);

  std::string slashes;
  for (int i = 0; i < 30; ++i) slashes += "123456789/";
  const ReadResult trailing = ReadVector("go/trailing-slash.tar");
  ASSERT_EQ(trailing.members.size(), 1u);
  EXPECT_EQ(trailing.members[0].name, slashes);
  EXPECT_EQ(trailing.members[0].type, TarEntryType::kDirectory);

  // 16 entries; the last 8 repeat the first 8 with a size set, which
  // header-only types (links, devices, directories, FIFOs) do not store.
  const ReadResult hdr_only = ReadVector("go/hdr-only.tar");
  ASSERT_EQ(hdr_only.members.size(), 16u);
  for (int i = 0; i < 8; ++i) {
    const TarMember& first = hdr_only.members[i];
    const TarMember& second = hdr_only.members[i + 8];
    EXPECT_EQ(first.name, second.name);
    EXPECT_EQ(first.type, second.type);
    EXPECT_EQ(first.link_name, second.link_name);
    if (first.type != TarEntryType::kRegular) {
      EXPECT_EQ(second.size, 0) << second.name;
    }
  }
}

TEST(TarReaderTest, PaxRecords) {
  SKIP_WITHOUT_SHARED_DATA();
  const ReadResult pos_size = ReadVector("go/pax-pos-size-file.tar");
  ASSERT_EQ(pos_size.members.size(), 1u);
  EXPECT_EQ(pos_size.members[0].name, "foo");
  EXPECT_EQ(pos_size.members[0].size, 999);  // "size=000...0999"
  EXPECT_EQ(Names(ReadVector("go/pax-records.tar")), std::vector<std::string>{"file"});
  EXPECT_EQ(Names(ReadVector("go/nil-uid.tar")), std::vector<std::string>{"P1050238.JPG.log"});
  EXPECT_EQ(Names(ReadVector("go/ustar-file-devs.tar")), std::vector<std::string>{"file"});
}

TEST(TarReaderTest, PaxGlobalRecordsApplyToLaterMembers) {
  SKIP_WITHOUT_SHARED_DATA();
  // global1 (path=global1), file1, x (path=file2) file2, global (path=),
  // file3, x (mtime) file4. POSIX: global records apply to later members
  // until a local record overrides them; an empty value deletes the record.
  // (Go returns global headers as entries and applies nothing; GNU tar and
  // Python's tarfile name file3 and file4 "".)
  EXPECT_EQ(Names(ReadVector("go/pax-global-records.tar")),
            (std::vector<std::string>{"global1", "file2", "file3", "file4"}));
}

TEST(TarReaderTest, SparseMembersAreOtherAndSkipped) {
  SKIP_WITHOUT_SHARED_DATA();
  const ReadResult result = ReadVector("go/sparse-formats.tar");
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(Names(result),
            (std::vector<std::string>{"sparse-gnu", "sparse-posix-0.0", "sparse-posix-0.1",
                                      "sparse-posix-1.0", "end"}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(result.members[i].type, TarEntryType::kOther);
  }
  EXPECT_EQ(result.members[4].type, TarEntryType::kRegular);
  EXPECT_EQ(result.data[4], "end\n");
  // The GNU sparse header has extension blocks before its data.
  EXPECT_EQ(result.members[0].data_offset, 3072);

  const ReadResult incremental = ReadVector("go/gnu-incremental.tar");
  ASSERT_EQ(Names(incremental), (std::vector<std::string>{"test2/", "test2/foo", "test2/sparse"}));
  EXPECT_EQ(incremental.members[0].type, TarEntryType::kOther);  // 'D'
  EXPECT_EQ(incremental.members[1].size, 64);
  EXPECT_EQ(incremental.members[2].type, TarEntryType::kOther);  // 'S'

  EXPECT_EQ(Names(ReadVector("go/gnu-sparse-big.tar")), std::vector<std::string>{"gnu-sparse"});
  EXPECT_EQ(Names(ReadVector("go/pax-sparse-big.tar")), std::vector<std::string>{"pax-sparse"});
}

TEST(TarReaderTest, CpythonTestTar) {
  SKIP_WITHOUT_SHARED_DATA();
  const ReadResult result = ReadVector("cpython/testtar.tar");
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(result.members.size(), 39u);
  // Every 7011-byte regular file holds the same bytes.
  const auto regtype =
      std::find_if(result.members.begin(), result.members.end(),
                   [](const TarMember& member) { return member.name == "ustar/regtype"; });
  ASSERT_NE(regtype, result.members.end());
  const std::string& expected = result.data[regtype - result.members.begin()];
  ASSERT_EQ(expected.size(), 7011u);
  int num_regular = 0;
  for (size_t i = 0; i < result.members.size(); ++i) {
    const TarMember& member = result.members[i];
    if (member.type == TarEntryType::kRegular && member.size == 7011) {
      ++num_regular;
      EXPECT_EQ(result.data[i], expected) << member.name;
    }
  }
  EXPECT_EQ(num_regular, 20);
  const std::vector<std::string> names = Names(result);
  auto has = [&names](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  EXPECT_TRUE(has("pax/umlauts-ÄÖÜäöüß"));
  // Solaris tar's 'X' extended header is understood as a PAX one.
  EXPECT_TRUE(has("misc/regtype-suntar"));
  EXPECT_TRUE(has("gnu/sparse-0.1"));
  EXPECT_EQ(names.back(), "misc/eof");
}

TEST(TarReaderTest, WebDatasetShard) {
  const std::string path =
      std::string(SHARDLOADER_SHARED_DATA_DIR) + "/cifar10-test/shards/cifar10-test-000000.tar";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  absl::StatusOr<std::unique_ptr<LocalFileSource>> source = LocalFileSource::Open(path);
  ASSERT_TRUE(source.ok()) << source.status();
  const ReadResult result = ReadAll(source->get(), (*source)->size_bytes());
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(result.members.size(), 2000u);
  EXPECT_EQ(result.members[0].name, "airplane_0000.jpg");
  EXPECT_EQ(result.members[1].name, "airplane_0000.cls");
  for (const TarMember& member : result.members) {
    EXPECT_EQ(member.type, TarEntryType::kRegular);
  }
}

// ---------------------------------------------------------------------------
// Truncation, as Go's TestReadTruncation.

struct TruncationCase {
  std::string input;
  int num_members;  // returned by Next()
  bool ok;          // false: DataLoss
};

TEST(TarReaderTest, Truncation) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string data1 = FileBytes(TarDir() + "/go/gnu.tar");
  const std::string data2 =
      FileBytes(TarDir() + "/go/ustar-file-reg.tar") + std::string(10 * 512, '\0');
  const std::string pax = FileBytes(TarDir() + "/go/pax-path-hdr.tar");
  const std::string sparse = FileBytes(TarDir() + "/go/sparse-formats.tar");
  std::string trash;
  for (int i = 0; i < 64; ++i) trash += "garbage ";  // 512 bytes
  const std::vector<TruncationCase> cases = {
      {"", 0, true},  // an empty stream is a valid archive
      {data1.substr(0, 511), 0, false},
      {data1.substr(0, 512), 1, false},
      {data1.substr(0, 1024), 1, true},
      {data1.substr(0, 1536), 2, false},
      {data1.substr(0, 2048), 2, true},
      {data1, 2, true},
      {data1.substr(0, 2048) + data2.substr(0, 1536), 3, true},
      {data2.substr(0, 511), 0, false},
      {data2.substr(0, 512), 1, false},
      {data2.substr(0, 1195), 1, false},
      {data2.substr(0, 1196), 1, true},  // the end of data, padding follows
      {data2.substr(0, 1200), 1, true},
      {data2.substr(0, 1535), 1, true},
      {data2.substr(0, 1536), 1, true},  // the end of padding
      {data2.substr(0, 1536) + trash.substr(0, 1), 1, false},
      {data2.substr(0, 1536) + trash.substr(0, 511), 1, false},
      {data2.substr(0, 1536) + trash, 1, false},
      {data2.substr(0, 2048), 1, true},  // one zero block
      {data2.substr(0, 2048) + trash.substr(0, 1), 1, false},
      {data2.substr(0, 2048) + trash.substr(0, 511), 1, false},
      {data2.substr(0, 2048) + trash, 1, false},
      {data2.substr(0, 2560), 1, true},  // two zero blocks: the end
      // Go stops at the end; shardloader rejects non-zero data after it (a
      // damaged shard, e.g. one zeroed in part, must not read as complete).
      {data2.substr(0, 2560) + trash.substr(0, 1), 1, false},
      {data2.substr(0, 2560) + trash.substr(0, 511), 1, false},
      {data2.substr(0, 2560) + trash, 1, false},
      {data2.substr(0, 3072), 1, true},
      {pax, 0, true},
      {pax + trash.substr(0, 1), 0, false},
      {pax + trash.substr(0, 511), 0, false},
      {sparse.substr(0, 511), 0, false},
      {sparse.substr(0, 512), 0, false},
      {sparse.substr(0, 3584), 1, true},
      {sparse.substr(0, 9200), 1, true},  // in the padding of a PAX header
      {sparse.substr(0, 9216), 1, true},
      {sparse.substr(0, 9728), 2, false},
      {sparse.substr(0, 10240), 2, true},
      {sparse.substr(0, 11264), 2, false},
      {sparse, 5, true},
      {sparse + trash, 5, false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    for (const bool read_data : {false, true}) {
      SCOPED_TRACE(absl::StrCat("case ", i, read_data ? " reading" : " skipping", " data"));
      const ReadResult result = ReadBytes(cases[i].input, read_data);
      EXPECT_EQ(static_cast<int>(result.members.size()), cases[i].num_members);
      if (cases[i].ok) {
        EXPECT_TRUE(result.status.ok()) << result.status;
      } else {
        EXPECT_EQ(result.status.code(), absl::StatusCode::kDataLoss) << result.status;
      }
    }
  }
}

TEST(TarReaderTest, TruncatedDataNamesTheMemberHeader) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string gnu = FileBytes(TarDir() + "/go/gnu.tar");
  for (const bool read_data : {false, true}) {
    // small2.txt's header is at 1024, its 11 bytes of data at 1536.
    const ReadResult result = ReadBytes(gnu.substr(0, 1540), read_data);
    EXPECT_EQ(result.status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(result.status.message()), HasSubstr("unexpected end of archive"));
    EXPECT_THAT(std::string(result.status.message()), HasSubstr("shard memory.tar, offset 1024"));
    EXPECT_EQ(GetContext(result.status).offset, 1024);
  }
  const ReadResult header = ReadBytes(gnu.substr(0, 1024 + 100));
  EXPECT_THAT(std::string(header.status.message()), HasSubstr("truncated tar header"));
  EXPECT_EQ(GetContext(header.status).offset, 1024);
}

// ---------------------------------------------------------------------------
// Crafted archives.

// A ustar header block with a valid checksum.
std::string Header(const std::string& name, char typeflag, int64_t size) {
  std::string block(512, '\0');
  block.replace(0, name.size(), name);
  auto octal = [&block](size_t offset, size_t width, int64_t value) {
    char digits[24];
    std::snprintf(digits, sizeof(digits), "%0*llo", static_cast<int>(width - 1),
                  static_cast<unsigned long long>(value));
    block.replace(offset, width - 1, digits);
  };
  octal(100, 8, 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, 0);
  block[156] = typeflag;
  block.replace(257, 8,
                std::string("ustar\0"
                            "00",
                            8));
  block.replace(148, 8, "        ");
  int64_t sum = 0;
  for (const char c : block) sum += static_cast<unsigned char>(c);
  octal(148, 7, sum);
  return block;
}

std::string Padded(std::string bytes) {
  bytes.resize((bytes.size() + 511) / 512 * 512, '\0');
  return bytes;
}

std::string EndBlocks() { return std::string(1024, '\0'); }

// A PAX header holding `records`, then a regular member "file" with `data`.
std::string PaxArchive(const std::string& records, const std::string& data = "") {
  return Header("PaxHeader", 'x', static_cast<int64_t>(records.size())) + Padded(records) +
         Header("file", '0', static_cast<int64_t>(data.size())) + Padded(data) + EndBlocks();
}

TEST(TarReaderTest, PaxRecordSyntax) {
  struct Case {
    std::string records;
    bool ok;
  };
  // Partly Go's TestParsePAX, and its validPAXRecord rules.
  const std::vector<Case> cases = {
      {"", true},
      {"6 k=1\n", true},
      {"10 a=name\n", true},
      {"9 a=name\n", true},
      {"30 mtime=1350244992.023960108\n", true},
      {"3 somelongkey=\n", false},
      {"50 tooshort=\n", false},
      {"13 key1=haha\n13 key2=nana\n13 key3=kaka\n", true},
      {"13 key1=val1\n13 key2=val2\n8 key1=\n", true},
      {"22 GNU.sparse.size=10\n26 GNU.sparse.numblocks=1\n"
       "25 GNU.sparse.numbytes=2\n23 GNU.sparse.offset=1\n",
       false},
      {"22 GNU.sparse.size=10\n26 GNU.sparse.numblocks=1\n"
       "25 GNU.sparse.offset=1,2\n25 GNU.sparse.numbytes=2\n",
       false},
      {"6 k=1", false},    // no newline
      {"6 k 1\n", false},  // no '='
      {"x k=1\n", false},  // bad length
      {"-6 k=1\n", false},
      {"5 =1\n", false},                             // empty key
      {std::string("7 k\0=1\n", 7), false},          // NUL in a key
      {std::string("12 path=a\0b\n", 12), false},    // NUL in a path
      {std::string("15 comment=a\0b\n", 15), true},  // NUL in other values
      {"16 mtime=-1.500\n", true},
      {"15 mtime=1.5e3\n", false},
      {"10 mtime=\n", true},  // empty: no value
      {"11 size=-1\n", false},
      {"11 uid=abc\n", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::CHexEscape(c.records));
    const ReadResult result = ReadBytes(PaxArchive(c.records));
    if (c.ok) {
      EXPECT_TRUE(result.status.ok()) << result.status;
      EXPECT_EQ(Names(result), std::vector<std::string>{"file"});
    } else {
      EXPECT_EQ(result.status.code(), absl::StatusCode::kDataLoss) << result.status;
      EXPECT_EQ(GetContext(result.status).offset, 0);
    }
  }
}

TEST(TarReaderTest, PaxOverrides) {
  ReadResult result = ReadBytes(PaxArchive("16 path=renamed\n10 size=3\n", "abc"));
  ASSERT_TRUE(result.status.ok()) << result.status;
  ASSERT_EQ(Names(result), std::vector<std::string>{"renamed"});
  EXPECT_EQ(result.members[0].size, 3);
  EXPECT_EQ(result.data[0], "abc");
  EXPECT_EQ(result.members[0].header_offset, 0);
  EXPECT_EQ(result.members[0].data_offset, 1536);

  // An empty global path is deleted; an empty local one restores the
  // header's name.
  const std::string global = "14 path=glob/\n";
  const std::string local_empty = "8 path=\n";
  const std::string bytes =
      Header("GlobalHead", 'g', static_cast<int64_t>(global.size())) + Padded(global) +
      Header("a", '0', 0) + Header("PaxHeader", 'x', static_cast<int64_t>(local_empty.size())) +
      Padded(local_empty) + Header("b", '0', 0) + Header("GlobalHead", 'g', 8) +
      Padded("8 path=\n") + Header("c", '0', 0) + EndBlocks();
  result = ReadBytes(bytes);
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(Names(result), (std::vector<std::string>{"glob/", "b", "c"}));
}

TEST(TarReaderTest, RejectsOversizedExtensionsWithoutAllocating) {
  // Extension headers claiming 1 GiB; only the header block is there.
  for (const char typeflag : {'x', 'g', 'L', 'K'}) {
    const ReadResult result = ReadBytes(Header("ext", typeflag, 1 << 30));
    EXPECT_EQ(result.status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(result.status.message()), HasSubstr("over the limit"));
  }
}

TEST(TarReaderTest, HugeSizeOfATruncatedMemberDoesNotAllocateIt) {
  // A base-256 size of 2^62 bytes and 4 bytes of data.
  std::string header = Header("huge", '0', 0);
  std::string size(12, '\0');
  size[0] = static_cast<char>(0x80);
  size[4] = 0x40;  // 2^62 = 0x40 << 56
  header.replace(124, 12, size);
  header.replace(148, 8, "        ");
  int64_t sum = 0;
  for (const char c : header) sum += static_cast<unsigned char>(c);
  char checksum[8];
  std::snprintf(checksum, sizeof(checksum), "%06llo", static_cast<unsigned long long>(sum));
  header.replace(148, 7, checksum, 7);

  MemorySource source("memory.tar", header + "data");
  TarReader reader(&source);
  absl::StatusOr<std::optional<TarMember>> member = reader.Next();
  ASSERT_TRUE(member.ok()) << member.status();
  ASSERT_TRUE(member->has_value());
  EXPECT_EQ((*member)->size, int64_t{1} << 62);
  std::string data;
  const absl::Status status = reader.ReadData(&data);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()), HasSubstr("offset 0"));
}

TEST(TarReaderTest, EndOfArchive) {
  EXPECT_TRUE(ReadBytes("").status.ok());
  EXPECT_TRUE(ReadBytes(std::string(512, '\0')).status.ok());
  // Data after the end marker: a damaged shard, not an empty one.
  const ReadResult trailing = ReadBytes(std::string(1024, '\0') + "trailing garbage");
  EXPECT_EQ(trailing.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(GetContext(trailing.status).offset, 1024);
  const ReadResult bad = ReadBytes(std::string(512, '\0') + Header("a", '0', 0));
  EXPECT_EQ(bad.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(GetContext(bad.status).offset, 512);
}

// Genuine empty archives, and archives padded with zeros to tar's record
// size (GNU tar: 10 KiB), read as they are.
TEST(TarReaderTest, ZeroPaddingAfterTheEndIsAccepted) {
  for (const size_t size : {size_t{1024}, size_t{10240}, size_t{1024 + 100}, size_t{200 * 1024}}) {
    SCOPED_TRACE(size);
    const ReadResult empty = ReadBytes(std::string(size, '\0'));
    EXPECT_TRUE(empty.status.ok()) << empty.status;
    EXPECT_TRUE(empty.members.empty());
  }
  std::string one = Header("a.txt", '0', 1) + Padded("A") + EndBlocks();
  one.resize(10240, '\0');
  const ReadResult padded = ReadBytes(one);
  EXPECT_TRUE(padded.status.ok()) << padded.status;
  EXPECT_EQ(padded.members.size(), 1u);
}

// A shard whose first kilobyte was zeroed used to read as a valid, empty
// shard: its remaining members follow the "end" and make it DataLoss naming
// the shard and the offset of the first byte after the zeros.
TEST(TarReaderTest, AShardWithItsStartZeroedIsDataLossNotEmpty) {
  std::string shard = Header("s0.cls", '0', 1) + Padded("1") + Header("s0.txt", '0', 5) +
                      Padded("hello") + Header("s1.cls", '0', 1) + Padded("2") + EndBlocks();
  std::fill(shard.begin(), shard.begin() + 1024, '\0');
  // Any offset past the zeros, also one far past a read step.
  for (const size_t zeros : {size_t{1024}, size_t{1024 + 70 * 1024}}) {
    std::string damaged = shard;
    damaged.insert(1024, zeros - 1024, '\0');
    const ReadResult result = ReadBytes(damaged);
    EXPECT_EQ(result.status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(result.status.message()), HasSubstr("after the end-of-archive marker"));
    EXPECT_EQ(GetContext(result.status).uri, "memory.tar");
    EXPECT_EQ(GetContext(result.status).offset, static_cast<int64_t>(zeros));
    EXPECT_TRUE(result.members.empty());
  }
}

TEST(TarReaderTest, BadChecksum) {
  std::string bytes = Header("file", '0', 0) + EndBlocks();
  bytes[0] = 'F';
  const ReadResult result = ReadBytes(bytes);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(result.status.message()), HasSubstr("checksum"));
}

TEST(TarReaderTest, ErrorsAreStickyAndEndIsRepeated) {
  std::string bytes = Header("a", '0', 1) + Padded("A") + Header("b", '0', 0);
  bytes[1024] ^= 1;  // b's checksum
  MemorySource source("memory.tar", bytes);
  TarReader reader(&source);
  ASSERT_TRUE(reader.Next().ok());
  const absl::Status first = reader.Next().status();
  EXPECT_EQ(first.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(reader.Next().status(), first);
  std::string data;
  EXPECT_EQ(reader.ReadData(&data), first);

  MemorySource empty("empty.tar", EndBlocks());
  TarReader at_end(&empty);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::optional<TarMember>> member = at_end.Next();
    ASSERT_TRUE(member.ok());
    EXPECT_FALSE(member->has_value());
  }
}

TEST(TarReaderTest, ReadDataOncePerMember) {
  MemorySource source("memory.tar", Header("a", '0', 3) + Padded("abc") + EndBlocks());
  TarReader reader(&source);
  std::string data = "previous contents, longer than the member";
  EXPECT_EQ(reader.ReadData(&data).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(reader.Next().ok());
  ASSERT_TRUE(reader.ReadData(&data).ok());
  EXPECT_EQ(data, "abc");
  EXPECT_EQ(reader.ReadData(&data).code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::optional<TarMember>> end = reader.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

// ---------------------------------------------------------------------------
// Robustness: corrupt real archives everywhere; every outcome must be OK or
// DataLoss, without crash or hang (ReadAll bounds the members).

void ExpectOkOrDataLoss(const std::string& bytes, bool read_data) {
  const absl::Status status = ReadBytes(bytes, read_data).status;
  if (!status.ok()) {
    ASSERT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    ASSERT_TRUE(GetContext(status).offset.has_value()) << status;
  }
}

TEST(TarReaderRobustnessTest, EveryByteFlippedAndEveryTruncation) {
  SKIP_WITHOUT_SHARED_DATA();
  for (const char* path : {"go/gnu.tar", "go/sparse-formats.tar", "go/pax-global-records.tar",
                           "go/gnu-multi-hdrs.tar", "go/xattrs.tar", "cpython/recursion.tar"}) {
    SCOPED_TRACE(path);
    const std::string original = FileBytes(TarDir() + "/" + path);
    ASSERT_FALSE(original.empty());
    for (size_t i = 0; i <= original.size(); ++i) {
      ExpectOkOrDataLoss(original.substr(0, i), /*read_data=*/i % 2 == 0);
    }
    // Values that make numbers invalid, huge, or base-256, and end strings.
    constexpr char kValues[] = {'\0', '\xff', '7', '\x80', ' '};
    for (size_t i = 0; i < original.size(); ++i) {
      std::string corrupt = original;
      corrupt[i] = kValues[i % sizeof(kValues)];
      if (corrupt[i] == original[i]) corrupt[i] ^= 1;
      ExpectOkOrDataLoss(corrupt, /*read_data=*/true);
    }
  }
}

TEST(TarReaderRobustnessTest, RandomCorruptionOfTestTar) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string original = FileBytes(TarDir() + "/cpython/testtar.tar");
  ASSERT_FALSE(original.empty());
  std::mt19937 random(1234);
  for (int round = 0; round < 300; ++round) {
    std::string corrupt = original;
    const int num_bytes = 1 + static_cast<int>(random() % 8);
    for (int i = 0; i < num_bytes; ++i) {
      corrupt[random() % corrupt.size()] = static_cast<char>(random());
    }
    corrupt.resize(random() % (corrupt.size() + 1));
    ExpectOkOrDataLoss(corrupt, /*read_data=*/round % 2 == 0);
  }
}

}  // namespace
}  // namespace shardloader

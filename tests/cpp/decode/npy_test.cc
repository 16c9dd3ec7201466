#include "shardloader/decode/npy.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardloader/dtype.h"

namespace shardloader {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Builds an .npy file as np.save does: magic, version, little-endian header
// length, the header padded with spaces and ended by '\n' so the data starts
// at a multiple of 64 bytes, then the data.
std::string MakeNpy(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += static_cast<char>(major);
  file += '\0';
  const size_t length_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < length_bytes; ++i) {
    file += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  }
  return file + header + data;
}

// A header with the usual keys.
std::string Dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::vector<int32_t> Iota(size_t n) {
  std::vector<int32_t> values(n);
  std::iota(values.begin(), values.end(), 0);
  return values;
}

TEST(NpyTest, ParsesFormatVersions) {
  const std::string data = Bytes(std::vector<float>{1, 2, 3, 4, 5, 6});
  for (int major : {1, 2, 3}) {
    const std::string file = MakeNpy(Dict("<f4", "(2, 3)"), data, major);
    const auto header = ParseNpyHeader(file);
    ASSERT_TRUE(header.ok()) << major << ": " << header.status();
    EXPECT_EQ(header->dtype, DType::kFloat32);
    EXPECT_FALSE(header->fortran_order);
    EXPECT_THAT(header->shape, ElementsAre(2, 3));
    EXPECT_EQ(header->data_offset % 64, 0u);
    EXPECT_EQ(file.substr(header->data_offset), data);
  }
}

TEST(NpyTest, ParsesHeaderSyntaxVariants) {
  struct Case {
    std::string dict;
    std::vector<int64_t> shape;
    bool fortran;
  };
  const Case cases[] = {
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", {6}, false},
      {"{'shape': (2, 3), 'fortran_order': True, 'descr': '<i4'}", {2, 3}, true},
      {"{ 'fortran_order' :False,'descr':'<i4' ,'shape':( 3 , 2 , ) , }", {3, 2}, false},
      {"{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": [6]}", {6}, false},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1L, 6L)}", {1, 6}, false},
      {"{'descr':'<i4',\n'fortran_order':False,\t'shape':(6,)}", {6}, false},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (+6,)}", {6}, false},
  };
  const std::string data = Bytes(Iota(6));
  for (const Case& c : cases) {
    const auto header = ParseNpyHeader(MakeNpy(c.dict, data));
    ASSERT_TRUE(header.ok()) << c.dict << ": " << header.status();
    EXPECT_EQ(header->dtype, DType::kInt32) << c.dict;
    EXPECT_EQ(header->fortran_order, c.fortran) << c.dict;
    EXPECT_EQ(header->shape, c.shape) << c.dict;
  }
}

TEST(NpyTest, ParsesScalarAndEmptyShapes) {
  const auto scalar = ParseNpyHeader(MakeNpy(Dict("<f8", "()"), Bytes(std::vector<double>{2})));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_THAT(scalar->shape, IsEmpty());

  const auto empty = ParseNpyHeader(MakeNpy(Dict("<f8", "(0, 5)"), ""));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(empty->shape, ElementsAre(0, 5));
}

TEST(NpyTest, MapsDtypeDescriptors) {
  struct Case {
    const char* descr;
    DType dtype;
  };
  const Case cases[] = {
      {"|b1", DType::kBool},    {"|u1", DType::kUInt8},   {"|i1", DType::kInt8},
      {"<u2", DType::kUInt16},  {"<i2", DType::kInt16},   {"<i4", DType::kInt32},
      {"<i8", DType::kInt64},   {"<f2", DType::kFloat16}, {"<f4", DType::kFloat32},
      {"<f8", DType::kFloat64}, {">u1", DType::kUInt8},   {"u1", DType::kUInt8},
      {"=f4", DType::kFloat32},
  };
  for (const Case& c : cases) {
    const std::string data(DTypeSize(c.dtype) * 2, '\0');
    const auto header = ParseNpyHeader(MakeNpy(Dict(c.descr, "(2,)"), data));
    ASSERT_TRUE(header.ok()) << c.descr << ": " << header.status();
    EXPECT_EQ(header->dtype, c.dtype) << c.descr;
  }
}

TEST(NpyTest, RejectsUnsupportedDtypes) {
  const std::string data(64, '\0');
  for (const char* descr : {">f4", ">i8", ">u2", "<u4", "<u8", "<c8", "<c16", "|O", "<U5", "|S3",
                            "|V8", "<M8[ns]", "<f16", "float32", ""}) {
    const auto header = ParseNpyHeader(MakeNpy(Dict(descr, "(2,)"), data));
    EXPECT_EQ(header.status().code(), absl::StatusCode::kDataLoss) << descr;
    EXPECT_THAT(std::string(header.status().message()), HasSubstr("unsupported dtype")) << descr;
  }
  const auto structured =
      ParseNpyHeader(MakeNpy("{'descr': [('x', '<f4'), ('y', '<i8')], 'fortran_order': False, "
                             "'shape': (2,), }",
                             data));
  EXPECT_EQ(structured.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(structured.status().message()), HasSubstr("unsupported dtype"));
}

TEST(NpyTest, RejectsMalformedHeaders) {
  const std::string data(64, '\0');
  const std::string bad_dicts[] = {
      "",
      "{",
      "}",
      "[]",
      "{'descr': '<f4', 'fortran_order': False}",
      "{'descr': '<f4', 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
      "'shape': (2,)}",
      "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': 2}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': ('2',)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': ((2,),)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3]}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}}",
      "{'descr': '<f4', 'fortran_order': False 'shape': (2,)}",
      "{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}",
      "{1: '<f4', 'fortran_order': False, 'shape': (2,)}",
      "{'descr': 4, 'fortran_order': False, 'shape': (2,)}",
      "{'descr': '<f4', 'fortran_order': False, "
      "'shape': (99999999999999999999,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(10000, '(') + "2" +
          std::string(10000, ')') + "}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
      "'x': " +
          std::string(10000, '[') + "}",
  };
  for (const std::string& dict : bad_dicts) {
    const auto header = ParseNpyHeader(MakeNpy(dict, data));
    EXPECT_EQ(header.status().code(), absl::StatusCode::kDataLoss) << dict.substr(0, 100);
  }
}

TEST(NpyTest, RejectsBadPrefixes) {
  const std::string good = MakeNpy(Dict("<f4", "(2,)"), std::string(8, '\0'));
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  std::string bad_version = good;
  bad_version[6] = 4;
  std::string bad_minor = good;
  bad_minor[7] = 1;
  std::string long_header = good;
  long_header[8] = '\xFF';
  long_header[9] = '\xFF';
  for (const std::string& file : {bad_magic, bad_version, bad_minor, long_header, std::string(),
                                  std::string("\x93NUMPY"), std::string("\x93NUMPY\x01\x00\x10")}) {
    EXPECT_EQ(ParseNpyHeader(file).status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(NpyTest, RejectsShortDataButAcceptsTrailingBytes) {
  const std::string header = Dict("<i4", "(2, 3)");
  const auto short_data = ParseNpyHeader(MakeNpy(header, Bytes(Iota(5))));
  EXPECT_EQ(short_data.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(short_data.status().message()), HasSubstr("shorter"));
  EXPECT_TRUE(ParseNpyHeader(MakeNpy(header, Bytes(Iota(7)))).ok());
  // An element count that overflows int64 is short data, not a crash.
  EXPECT_EQ(ParseNpyHeader(MakeNpy(Dict("<f8", "(4294967296, 4294967296)"), "")).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(NpyTest, EveryTruncationFailsCleanly) {
  const std::string file = MakeNpy(Dict("<i4", "(2, 3)"), Bytes(Iota(6)), /*major=*/2);
  for (size_t size = 0; size < file.size(); ++size) {
    const auto header = ParseNpyHeader(file.substr(0, size));
    EXPECT_EQ(header.status().code(), absl::StatusCode::kDataLoss) << size;
  }
  EXPECT_TRUE(ParseNpyHeader(file).ok());
}

TEST(NpyTest, SurvivesCorruptedHeaders) {
  const std::string file = MakeNpy(Dict("<i4", "(2, 3)", true), Bytes(Iota(6)));
  std::mt19937 random(1234);
  std::vector<char> output(6 * 4);
  for (int round = 0; round < 20000; ++round) {
    std::string corrupt = file;
    const int num_changes = 1 + random() % 4;
    for (int i = 0; i < num_changes; ++i) {
      corrupt[random() % 80] = static_cast<char>(random() % 256);
    }
    const auto header = ParseNpyHeader(corrupt);
    if (!header.ok()) {
      EXPECT_EQ(header.status().code(), absl::StatusCode::kDataLoss);
      continue;
    }
    // Whatever parsed must fit the bytes.
    size_t count = 1;
    for (const int64_t dim : header->shape) count *= dim;
    EXPECT_LE(header->data_offset + count * DTypeSize(header->dtype), corrupt.size());
    const absl::Status status = DecodeNpy(corrupt, DType::kInt32, {2, 3}, output.data());
    if (!status.ok()) {
      EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    }
  }
}

TEST(NpyTest, DecodesCOrder) {
  const std::vector<double> values = {1.5, -2, 3, 4e10, 5, 6};
  const std::string file = MakeNpy(Dict("<f8", "(3, 2)"), Bytes(values));
  std::vector<double> output(6);
  ASSERT_TRUE(
      DecodeNpy(file, DType::kFloat64, {3, 2}, reinterpret_cast<char*>(output.data())).ok());
  EXPECT_EQ(output, values);
}

TEST(NpyTest, DecodesScalarsAndEmptyArrays) {
  int64_t scalar = 0;
  ASSERT_TRUE(DecodeNpy(MakeNpy(Dict("<i8", "()"), Bytes(std::vector<int64_t>{-42})), DType::kInt64,
                        {}, reinterpret_cast<char*>(&scalar))
                  .ok());
  EXPECT_EQ(scalar, -42);
  char unused = 'x';
  EXPECT_TRUE(
      DecodeNpy(MakeNpy(Dict("<f4", "(0, 3)", true), ""), DType::kFloat32, {0, 3}, &unused).ok());
  EXPECT_EQ(unused, 'x');
}

TEST(NpyTest, MismatchNamesBothDtypesAndShapes) {
  const std::string file = MakeNpy(Dict("<f8", "(3, 4)"), std::string(96, '\0'));
  std::vector<char> output(96);
  const absl::Status dtype_mismatch = DecodeNpy(file, DType::kFloat32, {3, 4}, output.data());
  EXPECT_EQ(dtype_mismatch.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(dtype_mismatch.message(),
            "npy shape (3, 4) float64 does not match the declared (3, 4) "
            "float32");
  const absl::Status shape_mismatch = DecodeNpy(file, DType::kFloat64, {12}, output.data());
  EXPECT_EQ(shape_mismatch.message(),
            "npy shape (3, 4) float64 does not match the declared (12,) "
            "float64");
  const absl::Status rank_mismatch = DecodeNpy(file, DType::kFloat64, {}, output.data());
  EXPECT_THAT(std::string(rank_mismatch.message()), HasSubstr("the declared () float64"));
}

// Fortran-order data of `shape` whose element at C index (i0, i1, ...) holds
// its C-order flat index, so the decoded output must be 0, 1, 2, ...
template <typename T>
std::string FortranIota(const std::vector<int64_t>& shape) {
  size_t count = 1;
  for (const int64_t dim : shape) count *= dim;
  std::vector<T> fortran(count);
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t flat = 0; flat < count; ++flat) {
    size_t offset = 0;
    size_t stride = 1;
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      offset += index[axis] * stride;
      stride *= shape[axis];
    }
    fortran[offset] = static_cast<T>(flat);
    for (size_t axis = shape.size(); axis-- > 0;) {
      if (++index[axis] < shape[axis]) break;
      index[axis] = 0;
    }
  }
  return Bytes(fortran);
}

std::string ShapeTuple(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (const int64_t dim : shape) text += std::to_string(dim) + ", ";
  return text + ")";
}

template <typename T>
void ExpectFortranTransposed(const std::string& descr, DType dtype,
                             const std::vector<int64_t>& shape) {
  const std::string file = MakeNpy(Dict(descr, ShapeTuple(shape), true), FortranIota<T>(shape));
  size_t count = 1;
  for (const int64_t dim : shape) count *= dim;
  std::vector<T> output(count);
  ASSERT_TRUE(DecodeNpy(file, dtype, shape, reinterpret_cast<char*>(output.data())).ok());
  std::vector<T> expected(count);
  for (size_t i = 0; i < count; ++i) expected[i] = static_cast<T>(i);
  EXPECT_THAT(output, ElementsAreArray(expected)) << ShapeTuple(shape);
}

TEST(NpyTest, TransposesFortranOrder) {
  ExpectFortranTransposed<int32_t>("<i4", DType::kInt32, {2, 3});
  ExpectFortranTransposed<int32_t>("<i4", DType::kInt32, {4, 1});
  ExpectFortranTransposed<int32_t>("<i4", DType::kInt32, {7});
  ExpectFortranTransposed<uint8_t>("|u1", DType::kUInt8, {2, 3, 4});
  ExpectFortranTransposed<int16_t>("<i2", DType::kInt16, {3, 1, 5, 2});
  ExpectFortranTransposed<double>("<f8", DType::kFloat64, {5, 4, 3, 2, 1});
  ExpectFortranTransposed<int64_t>("<i8", DType::kInt64, {1, 9, 1, 10});
}

// ----------------------------------------------------- real .npy files ----

#ifdef SHARDLOADER_SHARED_DATA_DIR
const char kSharedDataDir[] = SHARDLOADER_SHARED_DATA_DIR;
#else
const char kSharedDataDir[] = "";
#endif

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

bool HaveNumpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

// NumPy's own reading of `path`, as C-order bytes.
std::string NumpyBytes(const std::filesystem::path& path) {
  // One file per process and call: CTest runs tests in parallel processes.
  static int calls = 0;
  const std::filesystem::path out =
      std::filesystem::path(testing::TempDir()) /
      ("npy_expected-" + std::to_string(::getpid()) + "-" + std::to_string(calls++) + ".bin");
  const std::string command =
      "python3 -c 'import sys, numpy as np; "
      "open(sys.argv[2], \"wb\").write("
      "np.ascontiguousarray(np.load(sys.argv[1])).tobytes())' '" +
      path.string() + "' '" + out.string() + "'";
  if (std::system(command.c_str()) != 0) return "<python failed>";
  return ReadFile(out);
}

std::filesystem::path NpyDir() { return std::filesystem::path(kSharedDataDir) / "edge" / "npy"; }

TEST(NpyRealFilesTest, MatchesNumpy) {
  if (!std::filesystem::is_directory(NpyDir())) {
    GTEST_SKIP() << "shared data not found at " << NpyDir();
  }
  if (!HaveNumpy()) GTEST_SKIP() << "python3 with numpy is not available";
  int num_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(NpyDir())) {
    if (entry.path().extension() != ".npy") continue;
    SCOPED_TRACE(entry.path().string());
    const std::string file = ReadFile(entry.path());
    const auto header = ParseNpyHeader(file);
    ASSERT_TRUE(header.ok()) << header.status();
    size_t count = 1;
    for (const int64_t dim : header->shape) count *= dim;
    std::string output(count * DTypeSize(header->dtype), '\0');
    ASSERT_TRUE(DecodeNpy(file, header->dtype, header->shape, output.data()).ok());
    EXPECT_TRUE(output == NumpyBytes(entry.path()));
    ++num_files;
  }
  EXPECT_GE(num_files, 6);
}

TEST(NpyRealFilesTest, FortranOrderWrittenByNumpy) {
  if (!HaveNumpy()) GTEST_SKIP() << "python3 with numpy is not available";
  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) /
                                     ("fortran-" + std::to_string(::getpid()) + ".npy");
  const std::string command =
      "python3 -c 'import sys, numpy as np; np.save(sys.argv[1], "
      "np.asfortranarray(np.arange(120, dtype=\"<f4\").reshape(2, 3, 4, 5) "
      "* 0.5))' '" +
      path.string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const std::string file = ReadFile(path);
  const auto header = ParseNpyHeader(file);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_TRUE(header->fortran_order);
  std::vector<float> output(120);
  ASSERT_TRUE(
      DecodeNpy(file, DType::kFloat32, {2, 3, 4, 5}, reinterpret_cast<char*>(output.data())).ok());
  for (size_t i = 0; i < output.size(); ++i) EXPECT_EQ(output[i], i * 0.5f);
  EXPECT_TRUE(Bytes(output) == NumpyBytes(path));
}

TEST(NpyRealFilesTest, RejectsNpz) {
  const std::filesystem::path path = NpyDir() / "chessboard_RGB_U8.npz";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "shared data not found at " << path;
  }
  const auto header = ParseNpyHeader(ReadFile(path));
  EXPECT_EQ(header.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(header.status().message()), HasSubstr(".npz"));
}

}  // namespace
}  // namespace shardloader

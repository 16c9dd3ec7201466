#include "shardloader/decode/field.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardloader/decode/image.h"
#include "shardloader/dtype.h"

namespace shardloader {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

FieldSpec Field(FieldKind kind) {
  FieldSpec field;
  field.name = "x";
  field.extensions = {"bin"};
  field.kind = kind;
  return field;
}

TEST(FieldSpecTest, Bytes) {
  const FieldSpec field = Field(FieldKind::kBytes);
  EXPECT_TRUE(field.ragged());
  EXPECT_EQ(field.batch_dtype(), DType::kUInt8);
  EXPECT_THAT(field.sample_shape(), IsEmpty());
  EXPECT_EQ(field.sample_bytes(), 0u);
  EXPECT_TRUE(field.Validate().ok());
}

TEST(FieldSpecTest, Text) {
  const FieldSpec field = Field(FieldKind::kText);
  EXPECT_TRUE(field.ragged());
  EXPECT_EQ(field.batch_dtype(), DType::kUInt8);
  EXPECT_THAT(field.sample_shape(), IsEmpty());
  EXPECT_EQ(field.sample_bytes(), 0u);
}

TEST(FieldSpecTest, Int) {
  const FieldSpec field = Field(FieldKind::kInt);
  EXPECT_FALSE(field.ragged());
  EXPECT_EQ(field.batch_dtype(), DType::kInt64);
  EXPECT_THAT(field.sample_shape(), IsEmpty());
  EXPECT_EQ(field.sample_bytes(), 8u);
}

TEST(FieldSpecTest, Npy) {
  FieldSpec field = Field(FieldKind::kNpy);
  field.dtype = DType::kFloat32;
  field.shape = {3, 4};
  EXPECT_FALSE(field.ragged());
  EXPECT_EQ(field.batch_dtype(), DType::kFloat32);
  EXPECT_THAT(field.sample_shape(), ElementsAre(3, 4));
  EXPECT_EQ(field.sample_bytes(), 48u);
  EXPECT_TRUE(field.Validate().ok());

  field.shape = {};  // a scalar
  field.dtype = DType::kFloat16;
  EXPECT_THAT(field.sample_shape(), IsEmpty());
  EXPECT_EQ(field.sample_bytes(), 2u);
  EXPECT_TRUE(field.Validate().ok());
}

TEST(FieldSpecTest, Image) {
  FieldSpec field = Field(FieldKind::kImage);
  field.image.height = 224;
  field.image.width = 160;
  field.dtype = DType::kFloat64;  // ignored for images
  EXPECT_EQ(field.batch_dtype(), DType::kUInt8);
  EXPECT_THAT(field.sample_shape(), ElementsAre(224, 160, 3));
  EXPECT_EQ(field.sample_bytes(), 224u * 160 * 3);
  field.image.layout = Layout::kCHW;
  EXPECT_THAT(field.sample_shape(), ElementsAre(3, 224, 160));
  EXPECT_EQ(field.sample_bytes(), 224u * 160 * 3);
  EXPECT_TRUE(field.Validate().ok());
}

TEST(FieldSpecTest, ValidateAcceptsUsualExtensions) {
  FieldSpec field = Field(FieldKind::kBytes);
  field.extensions = {"jpg", "jpeg", "png", "seg.png", "__key__", "x-1"};
  EXPECT_TRUE(field.Validate().ok());
}

void ExpectInvalid(const FieldSpec& field, const std::string& detail) {
  const absl::Status status = field.Validate();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << detail;
  EXPECT_THAT(std::string(status.message()), HasSubstr("field '" + field.name + "'"));
  EXPECT_THAT(std::string(status.message()), HasSubstr(detail));
}

TEST(FieldSpecTest, ValidateRejectsBadNamesAndExtensions) {
  FieldSpec field = Field(FieldKind::kBytes);
  field.name = "";
  ExpectInvalid(field, "name is empty");

  field = Field(FieldKind::kBytes);
  field.extensions = {};
  ExpectInvalid(field, "no extensions");

  for (const char* extension : {"JPG", "Png"}) {
    field.extensions = {"jpg", extension};
    ExpectInvalid(field, "lowercase");
  }
  for (const char* extension : {".jpg", "jpg.", "seg..png", "."}) {
    field.extensions = {extension};
    ExpectInvalid(field, "without the dot");
  }
  for (const char* extension : {"jpg;png", "jpg png", "a/b"}) {
    field.extensions = {extension};
    ExpectInvalid(field, "separator");
  }
  field.extensions = {""};
  ExpectInvalid(field, "empty");
}

// A declared Npy shape whose bytes could never be allocated (or overflow
// int64) is InvalidArgument, not std::bad_alloc when the batch is made.
TEST(FieldSpecTest, ValidateRejectsShapesTooLargeToAllocate) {
  FieldSpec field = Field(FieldKind::kNpy);
  field.dtype = DType::kFloat32;
  field.shape = {int64_t{1} << 40, int64_t{1} << 40};  // 2^82 bytes
  ExpectInvalid(field, "more than can be allocated");
  field.shape = {int64_t{1} << 62, 4};  // the element count overflows
  ExpectInvalid(field, "shape (4611686018427387904, 4) float32");
  field.shape = {(kMaxFieldBatchBytes / 4) + 1};
  ExpectInvalid(field, "more than can be allocated");
  field.shape = {kMaxFieldBatchBytes / 4};
  EXPECT_TRUE(field.Validate().ok());
  field.shape = {1 << 20};  // 4 MiB a sample
  EXPECT_TRUE(field.ValidateBatch(1 << 20).ok());
  const absl::Status batch = field.ValidateBatch(int64_t{1} << 40);
  EXPECT_EQ(batch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(batch.message()),
              HasSubstr("a batch of 1099511627776 samples of shape (1048576)"));
  // Fixed-size fields of other kinds are checked the same way.
  EXPECT_FALSE(Field(FieldKind::kInt).ValidateBatch(int64_t{1} << 50).ok());
  EXPECT_TRUE(Field(FieldKind::kBytes).ValidateBatch(int64_t{1} << 50).ok());
}

TEST(FieldSpecTest, ValidateRejectsBadShapes) {
  FieldSpec field = Field(FieldKind::kNpy);
  field.shape = {3, 0};
  ExpectInvalid(field, "shape (3, 0)");
  field.shape = {-1};
  ExpectInvalid(field, "positive");

  field = Field(FieldKind::kImage);
  field.image.height = 0;
  field.image.width = 10;
  ExpectInvalid(field, "got height 0 and width 10");
  field.image.height = 10;
  field.image.width = -2;
  ExpectInvalid(field, "must be positive");
  field.image.width = 10;
  field.image.resize = ResizeMode::kRandomResizedCrop;
  field.image.min_scale = 0.9;
  field.image.max_scale = 0.5;
  ExpectInvalid(field, "scale");
}

}  // namespace
}  // namespace shardloader

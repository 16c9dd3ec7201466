#include "shardloader/decode/field.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shardloader/dtype.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

absl::Status Invalid(const FieldSpec& field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("field '", field.name, "': ", why));
}

// Why `extension` cannot be matched against sample members, or "" if it is
// fine. Extensions are written lowercase and without the leading dot; a
// multi-part extension ("seg.png") is allowed, as in WebDataset.
std::string ExtensionProblem(const std::string& extension) {
  if (extension.empty()) return "an extension is empty";
  for (const char c : extension) {
    if (c >= 'A' && c <= 'Z') {
      return absl::StrCat("extension '", extension,
                          "' must be lowercase (sample extensions are "
                          "matched exactly)");
    }
    if (c == ';' || c == '/' || c == ' ' || c == '\t' || c == '\n') {
      return absl::StrCat("extension '", extension,
                          "' contains a separator; give each extension as "
                          "its own list item");
    }
  }
  if (extension.front() == '.' || extension.back() == '.' ||
      extension.find("..") != std::string::npos) {
    return absl::StrCat("extension '", extension, "' must be written without the dot (e.g. 'jpg')");
  }
  return "";
}

}  // namespace

DType FieldSpec::batch_dtype() const {
  switch (kind) {
    case FieldKind::kInt:
      return DType::kInt64;
    case FieldKind::kNpy:
      return dtype;
    case FieldKind::kBytes:
    case FieldKind::kText:
    case FieldKind::kImage:
      break;
  }
  return DType::kUInt8;
}

std::vector<int64_t> FieldSpec::sample_shape() const {
  switch (kind) {
    case FieldKind::kNpy:
      return shape;
    case FieldKind::kImage:
      if (image.layout == Layout::kCHW) return {3, image.height, image.width};
      return {image.height, image.width, 3};
    case FieldKind::kBytes:
    case FieldKind::kText:
    case FieldKind::kInt:
      break;
  }
  return {};
}

size_t FieldSpec::sample_bytes() const {
  if (ragged()) return 0;
  size_t bytes = DTypeSize(batch_dtype());
  for (const int64_t dim : sample_shape()) bytes *= static_cast<size_t>(dim);
  return bytes;
}

absl::Status FieldSpec::ValidateBatch(int64_t batch_size) const {
  if (ragged()) return absl::OkStatus();
  // Multiplied with a check before each step, so nothing overflows.
  int64_t bytes = static_cast<int64_t>(DTypeSize(batch_dtype()));
  bool too_large = false;
  for (const int64_t factor : sample_shape()) {
    too_large = too_large || factor > kMaxFieldBatchBytes / bytes;
    if (!too_large) bytes *= factor;
  }
  too_large = too_large || batch_size > kMaxFieldBatchBytes / bytes;
  if (!too_large) return absl::OkStatus();
  return Invalid(*this,
                 absl::StrCat(batch_size == 1 ? "one sample"
                                              : absl::StrCat("a batch of ", batch_size, " samples"),
                              " of shape (", absl::StrJoin(sample_shape(), ", "), ") ",
                              std::string(DTypeName(batch_dtype())), " needs more than ",
                              kMaxFieldBatchBytes, " bytes, more than can be allocated"));
}

absl::Status FieldSpec::Validate() const {
  if (name.empty()) return Invalid(*this, "the name is empty");
  if (extensions.empty()) {
    return Invalid(*this, "no extensions (e.g. {\"jpg\", \"png\"})");
  }
  for (const std::string& extension : extensions) {
    const std::string problem = ExtensionProblem(extension);
    if (!problem.empty()) return Invalid(*this, problem);
  }
  if (kind == FieldKind::kNpy) {
    for (const int64_t dim : shape) {
      if (dim <= 0) {
        return Invalid(*this, absl::StrCat("shape (", absl::StrJoin(shape, ", "),
                                           ") must have positive dimensions"));
      }
    }
    SHARDLOADER_RETURN_IF_ERROR(ValidateBatch(1));
  }
  if (kind == FieldKind::kImage) {
    const absl::Status status = ValidateImageOptions(image);
    if (!status.ok()) return Invalid(*this, status.message());
  }
  return absl::OkStatus();
}

}  // namespace shardloader

// FieldSpec: what the user declares for each field of a batch.
//
// A field names the batch key, the sample extensions it is read from (the
// first extension present in a sample wins, as in WebDataset's "jpg;png"),
// and how the bytes become a tensor:
//
//   kind    per-sample value                         batch tensor
//   kBytes  the raw bytes                            ragged: uint8 values + int64 offsets (B+1)
//   kText   UTF-8 text (validated)                   ragged: uint8 values + int64 offsets (B+1)
//   kInt    integer parsed from ASCII text (".cls")  int64 (B,)
//   kNpy    .npy array of a declared dtype, shape    dtype (B, *shape)
//   kImage  JPEG/PNG decoded, resized, RGB           uint8 (B, H, W, 3) or (B, 3, H, W)
//
// Thread-safety: plain value type.
#ifndef SHARDLOADER_DECODE_FIELD_H_
#define SHARDLOADER_DECODE_FIELD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "shardloader/decode/image.h"
#include "shardloader/dtype.h"

namespace shardloader {

enum class FieldKind { kBytes, kText, kInt, kNpy, kImage };

// The most bytes one field of a batch may take (128 TiB, the user address
// space of x86-64 and AArch64): a larger declared shape could never be
// allocated, and its byte count could overflow.
inline constexpr int64_t kMaxFieldBatchBytes = int64_t{1} << 47;

struct FieldSpec {
  std::string name;                     // key in the batch
  std::vector<std::string> extensions;  // lowercase, without the dot
  FieldKind kind = FieldKind::kBytes;
  DType dtype = DType::kUInt8;  // kNpy only
  std::vector<int64_t> shape;   // kNpy only: per-sample shape
  ImageOptions image;           // kImage only

  // True for kBytes and kText, whose values are ragged.
  bool ragged() const { return kind == FieldKind::kBytes || kind == FieldKind::kText; }
  // Element type of the batch tensor (the values tensor if ragged).
  DType batch_dtype() const;
  // Shape of one sample's value (empty for ragged and scalar fields).
  std::vector<int64_t> sample_shape() const;
  // Bytes of one sample's value; 0 for ragged fields.
  size_t sample_bytes() const;
  // Checks the declaration: a name, at least one extension, a positive shape
  // and image size, and a sample of at most kMaxFieldBatchBytes (computed
  // without overflow). Errors: InvalidArgument naming the field.
  absl::Status Validate() const;
  // Checks that a batch of `batch_size` samples of this field takes at most
  // kMaxFieldBatchBytes; requires Validate() to pass. Errors:
  // InvalidArgument naming the field, its shape and the bytes needed.
  absl::Status ValidateBatch(int64_t batch_size) const;
};

}  // namespace shardloader

#endif  // SHARDLOADER_DECODE_FIELD_H_

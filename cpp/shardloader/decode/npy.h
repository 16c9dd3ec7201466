// NumPy .npy decoding (format versions 1.0, 2.0 and 3.0).
//
// Specification: numpy/lib/format.py ("A Simple File Format for NumPy
// Arrays", NEP 1). Little-endian and byte-order-free dtypes are accepted;
// Fortran-order arrays are transposed into C order while copying.
//
// Thread-safety: pure functions.
#ifndef SHARDLOADER_DECODE_NPY_H_
#define SHARDLOADER_DECODE_NPY_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "shardloader/dtype.h"

namespace shardloader {

struct NpyHeader {
  DType dtype = DType::kUInt8;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // where the array data starts in the bytes
};

// Parses the header of `bytes`. Errors: DataLoss for a malformed header, an
// unsupported dtype (big-endian, structured, object) or data shorter than the
// shape requires.
absl::StatusOr<NpyHeader> ParseNpyHeader(std::string_view bytes);

// Decodes `bytes` into `dst` (product(shape) * DTypeSize(dtype) bytes, C
// order). Errors: DataLoss if the array's dtype or shape differs from the
// declared ones (the message gives both), or as ParseNpyHeader.
absl::Status DecodeNpy(std::string_view bytes, DType dtype, absl::Span<const int64_t> shape,
                       char* dst);

}  // namespace shardloader

#endif  // SHARDLOADER_DECODE_NPY_H_

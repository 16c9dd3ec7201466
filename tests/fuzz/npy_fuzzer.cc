// Fuzz target: `.npy` headers and data (decode/npy).
//
// Parses the header; when it parses and the array is small enough to
// allocate here (16 MiB), decodes it with its own dtype and shape (C and
// Fortran order). It also decodes the bytes as the declared fields of a
// Loader would, with a few fixed dtypes and shapes into buffers of exactly
// their size, which is how an `Npy` field meets a file's bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "shardloader/decode/npy.h"
#include "shardloader/dtype.h"

namespace {

struct Declared {
  shardloader::DType dtype;
  std::vector<int64_t> shape;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<shardloader::NpyHeader> header = shardloader::ParseNpyHeader(bytes);
  if (header.ok()) {
    constexpr size_t kLimit = size_t{16} << 20;
    size_t num_bytes = shardloader::DTypeSize(header->dtype);
    bool small = true;
    for (const int64_t dim : header->shape) {
      if (dim < 0 || (dim > 0 && num_bytes > kLimit / static_cast<size_t>(dim))) {
        small = false;
        break;
      }
      num_bytes *= static_cast<size_t>(dim);
    }
    if (small) {
      std::vector<char> dst(num_bytes);
      (void)shardloader::DecodeNpy(bytes, header->dtype, header->shape, dst.data());
    }
  }
  static const std::vector<Declared> kDeclared = {
      {shardloader::DType::kUInt8, {4, 4}},
      {shardloader::DType::kFloat32, {2, 3}},
      {shardloader::DType::kInt64, {3}},
      {shardloader::DType::kFloat32, {}},
  };
  for (const Declared& declared : kDeclared) {
    size_t num_bytes = shardloader::DTypeSize(declared.dtype);
    for (const int64_t dim : declared.shape) num_bytes *= static_cast<size_t>(dim);
    std::vector<char> dst(num_bytes);
    (void)shardloader::DecodeNpy(bytes, declared.dtype, declared.shape, dst.data());
  }
  return 0;
}

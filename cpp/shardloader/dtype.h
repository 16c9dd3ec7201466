// DType: the element types of batch tensors, as in NumPy and PyTorch.
//
// Thread-safety: pure functions.
#ifndef SHARDLOADER_DTYPE_H_
#define SHARDLOADER_DTYPE_H_

#include <cstddef>
#include <optional>
#include <string_view>

namespace shardloader {

enum class DType {
  kBool,
  kUInt8,
  kInt8,
  kUInt16,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kFloat32,
  kFloat64,
};

// Size of one element in bytes.
size_t DTypeSize(DType dtype);

// NumPy's name of the type: "uint8", "float32", ...
std::string_view DTypeName(DType dtype);

// Parses a NumPy type name ("float32", "int64", ...); nullopt if unknown.
std::optional<DType> DTypeFromName(std::string_view name);

}  // namespace shardloader

#endif  // SHARDLOADER_DTYPE_H_

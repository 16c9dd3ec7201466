#include "shardloader/io/read_range.h"

#include "absl/strings/str_cat.h"
#include "shardloader/status.h"

namespace shardloader {

bool RangeInside(int64_t offset, size_t size, int64_t source_size) {
  return offset >= 0 && offset <= source_size &&
         size <= static_cast<uint64_t>(source_size - offset);
}

absl::Status CheckReadRange(const std::string& uri, int64_t offset, size_t size,
                            int64_t source_size) {
  if (RangeInside(offset, size, source_size)) return absl::OkStatus();
  return WithContext(
      absl::DataLossError(absl::StrCat("unexpected end of data: wanted ", size, " bytes at offset ",
                                       offset, ", the shard has ", source_size)),
      {.uri = uri, .offset = offset});
}

}  // namespace shardloader

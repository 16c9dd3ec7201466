// Decoding of small text fields: integer class labels (".cls", ".idx") and
// UTF-8 text.
//
// Thread-safety: pure functions.
#ifndef SHARDLOADER_DECODE_TEXT_H_
#define SHARDLOADER_DECODE_TEXT_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace shardloader {

// Parses a base-10 integer surrounded by optional ASCII whitespace, as
// WebDataset writes labels ("7", "7\n"). Errors: DataLoss quoting the text
// (at most 32 bytes of it) when it is not an integer in int64 range.
absl::StatusOr<int64_t> ParseIntLabel(std::string_view text);

// Checks that `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF). Errors: DataLoss with the byte
// position of the first invalid sequence.
absl::Status ValidateUtf8(std::string_view text);

}  // namespace shardloader

#endif  // SHARDLOADER_DECODE_TEXT_H_

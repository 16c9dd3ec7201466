#include "shardloader/decode/text.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace shardloader {
namespace {

constexpr size_t kMaxQuotedBytes = 32;

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

absl::Status NotAnInteger(std::string_view text) {
  const std::string_view shown = text.substr(0, kMaxQuotedBytes);
  return absl::DataLossError(
      absl::StrCat("label is not an integer in int64 range: \"",
                   absl::CHexEscape(absl::string_view(shown.data(), shown.size())), "\"",
                   text.size() > kMaxQuotedBytes ? "..." : ""));
}

absl::Status InvalidUtf8(size_t position) {
  return absl::DataLossError(absl::StrCat("invalid UTF-8 sequence at byte ", position));
}

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

absl::StatusOr<int64_t> ParseIntLabel(std::string_view text) {
  std::string_view digits = text;
  while (!digits.empty() && IsAsciiSpace(digits.front())) {
    digits.remove_prefix(1);
  }
  while (!digits.empty() && IsAsciiSpace(digits.back())) {
    digits.remove_suffix(1);
  }
  bool negative = false;
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return NotAnInteger(text);
  // Accumulate the magnitude; int64's minimum has one more than its maximum.
  const uint64_t limit = uint64_t{std::numeric_limits<int64_t>::max()} + (negative ? 1 : 0);
  uint64_t magnitude = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return NotAnInteger(text);
    const unsigned digit = c - '0';
    if (magnitude > (limit - digit) / 10) return NotAnInteger(text);
    magnitude = magnitude * 10 + digit;
  }
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

absl::Status ValidateUtf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  size_t i = 0;
  while (i < size) {
    // Skip ASCII eight bytes at a time.
    if (size - i >= 8) {
      uint64_t word;
      std::memcpy(&word, bytes + i, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const unsigned char lead = bytes[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // RFC 3629, section 4: the second byte's range depends on the lead byte
    // (this excludes overlong forms, surrogates and values above U+10FFFF).
    size_t length;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return InvalidUtf8(i);
    }
    if (size - i < length) return InvalidUtf8(i);
    if (bytes[i + 1] < low || bytes[i + 1] > high) return InvalidUtf8(i);
    for (size_t k = 2; k < length; ++k) {
      if (!IsContinuation(bytes[i + k])) return InvalidUtf8(i);
    }
    i += length;
  }
  return absl::OkStatus();
}

}  // namespace shardloader

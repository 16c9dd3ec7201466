#include "shardloader/decode/npy.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "shardloader/dtype.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the npy decoder copies little-endian data as is");

constexpr std::string_view kMagic = "\x93NUMPY";

// Nesting deeper than this in the header is rejected (a hostile header must
// not exhaust the stack).
constexpr int kMaxDepth = 16;

// Debian's Abseil has its own absl::string_view, distinct from std's.
absl::string_view ToAbsl(std::string_view text) {
  return absl::string_view(text.data(), text.size());
}

absl::Status Malformed(absl::string_view why) {
  return absl::DataLossError(absl::StrCat("malformed npy header: ", why));
}

// The subset of Python literals that np.save writes in a header: strings,
// integers, booleans, None, tuples and lists (structured dtypes), and the
// top-level dict.
struct PyValue {
  enum class Kind { kString, kInt, kBool, kNone, kSequence };
  Kind kind = Kind::kNone;
  std::string text;  // kString: the value; otherwise the literal as written
  int64_t integer = 0;
  bool boolean = false;
  std::vector<PyValue> items;  // kSequence
};

class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  // Parses the whole header: one dict, then only whitespace.
  absl::Status ParseDict(std::vector<std::pair<std::string, PyValue>>* dict) {
    SkipSpace();
    if (!Consume('{')) return Malformed("expected '{'");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      PyValue key;
      SHARDLOADER_RETURN_IF_ERROR(ParseValue(/*depth=*/1, &key));
      if (key.kind != PyValue::Kind::kString) {
        return Malformed("dict keys must be strings");
      }
      SkipSpace();
      if (!Consume(':')) return Malformed("expected ':' after a key");
      PyValue value;
      SHARDLOADER_RETURN_IF_ERROR(ParseValue(/*depth=*/1, &value));
      for (const auto& entry : *dict) {
        if (entry.first == key.text) {
          return Malformed(absl::StrCat("duplicate key '", key.text, "'"));
        }
      }
      dict->emplace_back(std::move(key.text), std::move(value));
      SkipSpace();
      if (Consume('}')) break;
      if (!Consume(',')) return Malformed("expected ',' or '}' in the dict");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Malformed("text after the dict");
    return absl::OkStatus();
  }

 private:
  absl::Status ParseValue(int depth, PyValue* value) {
    if (depth > kMaxDepth) return Malformed("nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) return Malformed("unexpected end");
    const char c = text_[pos_];
    if (c == '\'' || c == '"') return ParseString(value);
    if (c == '(' || c == '[') return ParseSequence(depth, value);
    if (c == '-' || c == '+' || IsDigit(c)) return ParseInt(value);
    const size_t start = pos_;
    while (pos_ < text_.size() && IsIdentifierChar(text_[pos_])) ++pos_;
    const std::string_view word = text_.substr(start, pos_ - start);
    value->text = std::string(word);
    if (word == "True" || word == "False") {
      value->kind = PyValue::Kind::kBool;
      value->boolean = word == "True";
      return absl::OkStatus();
    }
    if (word == "None") {
      value->kind = PyValue::Kind::kNone;
      return absl::OkStatus();
    }
    return Malformed(
        absl::StrCat("unexpected '", absl::CHexEscape(ToAbsl(text_.substr(start, 16))), "'"));
  }

  // A quoted string without escapes (dtype descriptors and keys have none).
  absl::Status ParseString(PyValue* value) {
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return Malformed("unterminated string");
    value->kind = PyValue::Kind::kString;
    value->text = std::string(text_.substr(pos_, end - pos_));
    if (value->text.find('\\') != std::string::npos) {
      return Malformed("escapes in strings are not supported");
    }
    pos_ = end + 1;
    return absl::OkStatus();
  }

  // A tuple or list; "(3)" is a parenthesized integer in Python, not a
  // tuple, and is accepted as one.
  absl::Status ParseSequence(int depth, PyValue* value) {
    const char close = text_[pos_++] == '(' ? ')' : ']';
    value->kind = PyValue::Kind::kSequence;
    bool saw_comma = false;
    while (true) {
      SkipSpace();
      if (Consume(close)) break;
      PyValue item;
      SHARDLOADER_RETURN_IF_ERROR(ParseValue(depth + 1, &item));
      value->items.push_back(std::move(item));
      SkipSpace();
      if (Consume(close)) break;
      if (!Consume(',')) {
        return Malformed(absl::StrCat("expected ',' or '", std::string(1, close), "'"));
      }
      saw_comma = true;
    }
    if (close == ')' && value->items.size() == 1 && !saw_comma) {
      PyValue inner = std::move(value->items[0]);
      *value = std::move(inner);
    }
    return absl::OkStatus();
  }

  // A base-10 integer; Python 2 wrote shapes as "(3L, 4L)".
  absl::Status ParseInt(PyValue* value) {
    const size_t start = pos_;
    bool negative = false;
    if (text_[pos_] == '-' || text_[pos_] == '+') {
      negative = text_[pos_] == '-';
      ++pos_;
    }
    uint64_t magnitude = 0;
    const size_t digits_start = pos_;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) {
      const unsigned digit = text_[pos_] - '0';
      if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
        return Malformed("integer out of range");
      }
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    if (pos_ == digits_start) return Malformed("expected digits");
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) {
      ++pos_;
    }
    constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
    if (magnitude > kMax + (negative ? 1 : 0)) {
      return Malformed("integer out of range");
    }
    value->kind = PyValue::Kind::kInt;
    value->text = std::string(text_.substr(start, pos_ - start));
    value->integer =
        negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    return absl::OkStatus();
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }
  static bool IsIdentifierChar(char c) {
    return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// `what` describes the dtype, e.g. "'>f4'".
absl::Status UnsupportedDtype(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("unsupported dtype ", what,
                                          " in npy (supported: little-endian or byte-order-free "
                                          "bool, int8/16/32/64, uint8/16, float16/32/64)"));
}

// Maps a dtype descriptor ("<f4", "|u1", ...) to a DType.
absl::StatusOr<DType> ParseDescr(std::string_view descr) {
  std::string_view type = descr;
  char byte_order = '=';
  if (!type.empty() && (type[0] == '<' || type[0] == '>' || type[0] == '|' || type[0] == '=')) {
    byte_order = type[0];
    type.remove_prefix(1);
  }
  struct Code {
    std::string_view code;
    DType dtype;
  };
  static constexpr Code kCodes[] = {
      {"b1", DType::kBool},    {"u1", DType::kUInt8},   {"i1", DType::kInt8},
      {"u2", DType::kUInt16},  {"i2", DType::kInt16},   {"i4", DType::kInt32},
      {"i8", DType::kInt64},   {"f2", DType::kFloat16}, {"f4", DType::kFloat32},
      {"f8", DType::kFloat64},
  };
  for (const Code& code : kCodes) {
    if (type != code.code) continue;
    // '>' is harmless for single bytes; multi-byte values would need a swap.
    if (byte_order == '>' && DTypeSize(code.dtype) > 1) break;
    return code.dtype;
  }
  return UnsupportedDtype(absl::StrCat("'", absl::CHexEscape(ToAbsl(descr)), "'"));
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// Number of elements, or nullopt if it overflows int64.
std::optional<int64_t> NumElements(absl::Span<const int64_t> shape) {
  int64_t count = 1;
  for (const int64_t dim : shape) {
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim) {
      return std::nullopt;
    }
    count *= dim;
  }
  return count;
}

// Copies a Fortran-order array of `shape` into C order, element by element.
template <size_t kSize>
void FortranToC(const char* src, absl::Span<const int64_t> shape, char* dst) {
  const size_t rank = shape.size();
  // Strides of the Fortran-order source in elements: first axis fastest.
  std::vector<int64_t> stride(rank);
  int64_t step = 1;
  for (size_t axis = 0; axis < rank; ++axis) {
    stride[axis] = step;
    step *= shape[axis];
  }
  // Walk the destination in C order, the last axis fastest; `index` is the
  // odometer over all but the last axis.
  const int64_t last = shape[rank - 1];
  const int64_t last_stride = stride[rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  const int64_t num_rows = *NumElements(shape.subspan(0, rank - 1));
  int64_t row_offset = 0;  // source offset of the current row's first element
  for (int64_t row = 0; row < num_rows; ++row) {
    const char* in = src + row_offset * kSize;
    for (int64_t i = 0; i < last; ++i) {
      std::memcpy(dst, in, kSize);
      dst += kSize;
      in += last_stride * kSize;
    }
    for (size_t axis = rank - 1; axis-- > 0;) {
      row_offset += stride[axis];
      if (++index[axis] < shape[axis]) break;
      row_offset -= stride[axis] * shape[axis];
      index[axis] = 0;
    }
  }
}

}  // namespace

absl::StatusOr<NpyHeader> ParseNpyHeader(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    if (bytes.substr(0, 4) == "PK\x03\x04") {
      return absl::DataLossError(
          "not an npy array: this is a zip archive (.npz), which is not "
          "supported; store each array as its own .npy member");
    }
    return absl::DataLossError("not an npy array (bad magic)");
  }
  if (bytes.size() < 10) return Malformed("truncated before the header");
  const auto major = static_cast<unsigned char>(bytes[6]);
  const auto minor = static_cast<unsigned char>(bytes[7]);
  size_t header_len;
  size_t prefix;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Malformed("truncated before the header");
    header_len = 0;
    for (int i = 3; i >= 0; --i) {
      header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + i]);
    }
    prefix = 12;
  } else {
    return absl::DataLossError(absl::StrCat("unsupported npy format version ", major, ".", minor));
  }
  if (minor != 0) {
    return absl::DataLossError(absl::StrCat("unsupported npy format version ", major, ".", minor));
  }
  if (header_len > bytes.size() - prefix) {
    return Malformed(absl::StrCat("header of ", header_len, " bytes but only ",
                                  bytes.size() - prefix, " bytes follow"));
  }
  // Version 3.0 allows UTF-8 in the header; only field names of structured
  // dtypes can use it, and those are rejected anyway, so the parser works on
  // bytes for every version.
  std::vector<std::pair<std::string, PyValue>> dict;
  HeaderParser parser(bytes.substr(prefix, header_len));
  SHARDLOADER_RETURN_IF_ERROR(parser.ParseDict(&dict));

  const PyValue* descr = nullptr;
  const PyValue* fortran_order = nullptr;
  const PyValue* shape = nullptr;
  for (const auto& [key, value] : dict) {
    if (key == "descr") {
      descr = &value;
    } else if (key == "fortran_order") {
      fortran_order = &value;
    } else if (key == "shape") {
      shape = &value;
    } else {
      return Malformed(absl::StrCat("unexpected key '", absl::CHexEscape(key), "'"));
    }
  }
  if (descr == nullptr || fortran_order == nullptr || shape == nullptr) {
    return Malformed("needs the keys 'descr', 'fortran_order' and 'shape'");
  }

  NpyHeader header;
  if (descr->kind == PyValue::Kind::kSequence) {
    return UnsupportedDtype("(a structured dtype)");
  }
  if (descr->kind != PyValue::Kind::kString) {
    return Malformed("'descr' must be a string");
  }
  SHARDLOADER_ASSIGN_OR_RETURN(header.dtype, ParseDescr(descr->text));
  if (fortran_order->kind != PyValue::Kind::kBool) {
    return Malformed("'fortran_order' must be True or False");
  }
  header.fortran_order = fortran_order->boolean;
  if (shape->kind != PyValue::Kind::kSequence) {
    return Malformed("'shape' must be a tuple");
  }
  for (const PyValue& dim : shape->items) {
    if (dim.kind != PyValue::Kind::kInt || dim.integer < 0) {
      return Malformed("'shape' must hold non-negative integers");
    }
    header.shape.push_back(dim.integer);
  }
  header.data_offset = prefix + header_len;

  const std::optional<int64_t> num_elements = NumElements(header.shape);
  const size_t available = bytes.size() - header.data_offset;
  const size_t element_size = DTypeSize(header.dtype);
  if (!num_elements.has_value() ||
      static_cast<uint64_t>(*num_elements) > available / element_size) {
    return absl::DataLossError(absl::StrCat(
        "npy data is ", available, " bytes, shorter than shape ", ShapeString(header.shape), " of ",
        ToAbsl(DTypeName(header.dtype)), " requires"));
  }
  return header;
}

absl::Status DecodeNpy(std::string_view bytes, DType dtype, absl::Span<const int64_t> shape,
                       char* dst) {
  SHARDLOADER_ASSIGN_OR_RETURN(const NpyHeader header, ParseNpyHeader(bytes));
  if (header.dtype != dtype || absl::Span<const int64_t>(header.shape) != shape) {
    return absl::DataLossError(absl::StrCat(
        "npy shape ", ShapeString(header.shape), " ", ToAbsl(DTypeName(header.dtype)),
        " does not match the declared ", ShapeString(shape), " ", ToAbsl(DTypeName(dtype))));
  }
  const char* src = bytes.data() + header.data_offset;
  const size_t element_size = DTypeSize(dtype);
  const size_t num_bytes = *NumElements(shape) * element_size;
  if (num_bytes == 0) return absl::OkStatus();
  // Fortran and C order agree when at most one axis is longer than 1.
  int long_axes = 0;
  for (const int64_t dim : shape) long_axes += dim > 1 ? 1 : 0;
  if (!header.fortran_order || long_axes <= 1) {
    std::memcpy(dst, src, num_bytes);
    return absl::OkStatus();
  }
  switch (element_size) {
    case 1:
      FortranToC<1>(src, shape, dst);
      break;
    case 2:
      FortranToC<2>(src, shape, dst);
      break;
    case 4:
      FortranToC<4>(src, shape, dst);
      break;
    case 8:
      FortranToC<8>(src, shape, dst);
      break;
  }
  return absl::OkStatus();
}

}  // namespace shardloader

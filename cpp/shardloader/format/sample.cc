#include "shardloader/format/sample.h"

#include "absl/strings/ascii.h"

namespace shardloader {

const SampleField* Sample::Find(absl::string_view extension) const {
  for (const SampleField& field : fields) {
    if (field.extension == extension) return &field;
  }
  return nullptr;
}

std::optional<KeyAndExtension> SplitKey(absl::string_view path) {
  const size_t slash = path.rfind('/');
  const size_t name_start = slash == absl::string_view::npos ? 0 : slash + 1;
  const size_t dot = path.find('.', name_start);
  if (dot == absl::string_view::npos || dot == name_start || dot + 1 == path.size()) {
    return std::nullopt;
  }
  return KeyAndExtension{path.substr(0, dot), absl::AsciiStrToLower(path.substr(dot + 1))};
}

}  // namespace shardloader

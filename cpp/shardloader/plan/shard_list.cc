#include "shardloader/plan/shard_list.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/io/uri.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

constexpr int64_t kMaxExpansion = 10'000'000;

// Finds the first top-level "{...}" group; returns false if there is none.
absl::StatusOr<bool> FindGroup(absl::string_view pattern, size_t* open, size_t* close) {
  const size_t start = pattern.find('{');
  if (start == absl::string_view::npos) {
    if (pattern.find('}') != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("unbalanced '}' in shard pattern \"", pattern, "\""));
    }
    return false;
  }
  int depth = 0;
  for (size_t i = start; i < pattern.size(); ++i) {
    if (pattern[i] == '{') ++depth;
    if (pattern[i] == '}' && --depth == 0) {
      *open = start;
      *close = i;
      return true;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unbalanced '{' in shard pattern \"", pattern, "\""));
}

bool HasLeadingZero(absl::string_view digits) {
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    digits.remove_prefix(1);
  }
  return digits.size() > 1 && digits[0] == '0';
}

// Expands the body of one group: "a..b" (numeric) or "x,y,z" (alternatives,
// which may nest groups). Returns the items, not yet combined with the rest.
absl::StatusOr<std::vector<std::string>> ExpandGroup(absl::string_view body) {
  const std::vector<absl::string_view> bounds = absl::StrSplit(body, "..");
  int64_t first = 0;
  int64_t last = 0;
  if (bounds.size() == 2 && absl::SimpleAtoi(bounds[0], &first) &&
      absl::SimpleAtoi(bounds[1], &last)) {
    const int64_t count = (first <= last ? last - first : first - last) + 1;
    if (count > kMaxExpansion) {
      return absl::InvalidArgumentError(
          absl::StrCat("brace range {", body, "} has more than ", kMaxExpansion, " items"));
    }
    const size_t width = (HasLeadingZero(bounds[0]) || HasLeadingZero(bounds[1]))
                             ? std::max(bounds[0].size(), bounds[1].size())
                             : 0;
    std::vector<std::string> items;
    items.reserve(count);
    const int64_t step = first <= last ? 1 : -1;
    for (int64_t i = 0, value = first; i < count; ++i, value += step) {
      items.push_back(absl::StrFormat("%0*d", width, value));
    }
    return items;
  }
  // Alternatives: split on top-level commas.
  std::vector<std::string> items;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i < body.size() && body[i] == '{') ++depth;
    if (i < body.size() && body[i] == '}') --depth;
    if (i == body.size() || (body[i] == ',' && depth == 0)) {
      SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> expanded,
                                   ExpandBraces(body.substr(begin, i - begin)));
      for (std::string& item : expanded) items.push_back(std::move(item));
      begin = i + 1;
    }
  }
  return items;
}

absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> shards;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".tar") {
      shards.push_back(entry.path().string());
    }
  }
  if (error) {
    return WithContext(
        absl::NotFoundError(absl::StrCat("cannot list shard directory: ", error.message())),
        {.uri = dir});
  }
  std::sort(shards.begin(), shards.end());
  return shards;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandBraces(absl::string_view pattern) {
  size_t open = 0;
  size_t close = 0;
  SHARDLOADER_ASSIGN_OR_RETURN(const bool found, FindGroup(pattern, &open, &close));
  if (!found) return std::vector<std::string>{std::string(pattern)};
  SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> middle,
                               ExpandGroup(pattern.substr(open + 1, close - open - 1)));
  SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> rest,
                               ExpandBraces(pattern.substr(close + 1)));
  if (static_cast<int64_t>(middle.size()) * static_cast<int64_t>(rest.size()) > kMaxExpansion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard pattern \"", pattern, "\" expands to more than ", kMaxExpansion, " names"));
  }
  const absl::string_view prefix = pattern.substr(0, open);
  std::vector<std::string> result;
  result.reserve(middle.size() * rest.size());
  for (const std::string& item : middle) {
    for (const std::string& tail : rest) {
      result.push_back(absl::StrCat(prefix, item, tail));
    }
  }
  return result;
}

absl::StatusOr<std::vector<std::string>> ResolveShards(absl::Span<const std::string> specs) {
  return ResolveShards(specs, SourceOptions());
}

absl::StatusOr<std::vector<std::string>> ResolveShards(absl::Span<const std::string> specs,
                                                       const SourceOptions& source) {
  std::vector<std::string> shards;
  for (const std::string& joined : specs) {
    for (absl::string_view spec : absl::StrSplit(joined, "::", absl::SkipEmpty())) {
      SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> expanded, ExpandBraces(spec));
      for (std::string& name : expanded) {
        // Remote prefixes (io/remote/remote_source.h): listed, *.tar kept.
        if (IsRemoteUri(name) && absl::EndsWith(name, "/")) {
          SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> listed, ListPrefix(name, source));
          for (std::string& uri : listed) {
            if (absl::EndsWith(uri, ".tar")) shards.push_back(std::move(uri));
          }
          continue;
        }
        std::error_code error;
        if (name.find("://") == std::string::npos && std::filesystem::is_directory(name, error)) {
          SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> listed, ListDirectory(name));
          for (std::string& shard : listed) shards.push_back(std::move(shard));
        } else {
          shards.push_back(std::move(name));
        }
      }
    }
  }
  if (shards.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no shards: \"", absl::StrJoin(specs, "\", \""),
                     "\" names no shard (an empty list, or a directory without .tar files)"));
  }
  return shards;
}

}  // namespace shardloader

#include "shardloader/io/remote/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shardloader {
namespace {

std::string HmacSha256(absl::string_view key, absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &length);
  return std::string(reinterpret_cast<char*>(digest), length);
}

}  // namespace

std::string UriEncode(absl::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return out;
}

std::string CanonicalQuery(const QueryParams& query) {
  std::vector<std::string> parts;
  parts.reserve(query.size());
  for (const auto& [name, value] : query) {
    parts.push_back(absl::StrCat(UriEncode(name, false), "=", UriEncode(value, false)));
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, "&");
}

std::string AmzDate(absl::Time now) {
  return absl::FormatTime("%Y%m%dT%H%M%SZ", now, absl::UTCTimeZone());
}

std::string SigV4Authorization(const SigV4Key& key, absl::string_view amz_date,
                               const SigV4Input& input) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [name, value] : input.headers) {
    headers.emplace_back(absl::AsciiStrToLower(name),
                         std::string(absl::StripAsciiWhitespace(value)));
  }
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers;
  std::vector<absl::string_view> names;
  for (const auto& [name, value] : headers) {
    absl::StrAppend(&canonical_headers, name, ":", value, "\n");
    names.push_back(name);
  }
  const std::string signed_headers = absl::StrJoin(names, ";");
  const std::string canonical_request =
      absl::StrCat(input.method, "\n", input.canonical_uri, "\n", input.canonical_query, "\n",
                   canonical_headers, "\n", signed_headers, "\n", input.payload_sha256);
  const absl::string_view date = amz_date.substr(0, 8);
  const std::string scope = absl::StrCat(date, "/", key.region, "/", key.service, "/aws4_request");
  const std::string string_to_sign =
      absl::StrCat("AWS4-HMAC-SHA256\n", amz_date, "\n", scope, "\n", Sha256Hex(canonical_request));
  std::string signing_key = HmacSha256(absl::StrCat("AWS4", key.secret_access_key), date);
  signing_key = HmacSha256(signing_key, key.region);
  signing_key = HmacSha256(signing_key, key.service);
  signing_key = HmacSha256(signing_key, "aws4_request");
  const std::string signature = absl::BytesToHexString(HmacSha256(signing_key, string_to_sign));
  return absl::StrCat("AWS4-HMAC-SHA256 Credential=", key.access_key_id, "/", scope,
                      ", SignedHeaders=", signed_headers, ", Signature=", signature);
}

}  // namespace shardloader

#include "shardloader/io/remote/s3_client.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "shardloader/io/remote/http_errors.h"
#include "shardloader/io/remote/retry.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

std::string EndpointFromEnvironment() {
  for (const char* variable : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && value[0] != '\0') return value;
  }
  return "";
}

// The text of each <tag>...</tag> in `xml`, entity-decoded. S3's listing
// documents are flat enough for this; no general XML parser is needed.
std::vector<std::string> XmlValues(absl::string_view xml, absl::string_view tag) {
  const std::string open = absl::StrCat("<", tag, ">");
  const std::string close = absl::StrCat("</", tag, ">");
  std::vector<std::string> values;
  size_t at = 0;
  while ((at = xml.find(open, at)) != absl::string_view::npos) {
    const size_t begin = at + open.size();
    const size_t end = xml.find(close, begin);
    if (end == absl::string_view::npos) break;
    std::string value(xml.substr(begin, end - begin));
    // The five predefined XML entities, &amp; last.
    for (const auto& [entity, text] : {std::pair{"&lt;", "<"},
                                       {"&gt;", ">"},
                                       {"&quot;", "\""},
                                       {"&apos;", "'"},
                                       {"&amp;", "&"}}) {
      value = absl::StrReplaceAll(value, {{entity, text}});
    }
    values.push_back(std::move(value));
    at = end + close.size();
  }
  return values;
}

}  // namespace

absl::StatusOr<S3Location> ParseS3Uri(const std::string& uri) {
  absl::string_view rest = uri;
  if (!absl::ConsumePrefix(&rest, "s3://")) {
    return WithContext(absl::InvalidArgumentError("not an s3:// URI"), {.uri = uri});
  }
  const size_t slash = rest.find('/');
  S3Location location{std::string(rest.substr(0, slash)),
                      slash == absl::string_view::npos ? "" : std::string(rest.substr(slash + 1))};
  if (location.bucket.empty()) {
    return WithContext(absl::InvalidArgumentError("an s3:// URI needs a bucket"), {.uri = uri});
  }
  return location;
}

S3Client::S3Client(SourceOptions options, std::shared_ptr<HttpTransport> transport,
                   std::string endpoint, bool path_style, std::string region,
                   AwsCredentials credentials, bool anonymous)
    : options_(std::move(options)),
      transport_(std::move(transport)),
      endpoint_(std::move(endpoint)),
      path_style_(path_style),
      region_(std::move(region)),
      credentials_(std::move(credentials)),
      anonymous_(anonymous) {}

absl::StatusOr<std::shared_ptr<const S3Client>> S3Client::Create(
    const SourceOptions& options, std::shared_ptr<HttpTransport> transport) {
  std::string endpoint =
      options.endpoint_url.empty() ? EndpointFromEnvironment() : options.endpoint_url;
  const bool custom = !endpoint.empty();
  const std::string region = ResolveAwsRegion(options.region, options.profile);
  if (custom) {
    if (!absl::StartsWith(endpoint, "http://") && !absl::StartsWith(endpoint, "https://")) {
      return absl::InvalidArgumentError(
          absl::StrCat("endpoint_url must start with http:// or https://: '", endpoint, "'"));
    }
    while (absl::EndsWith(endpoint, "/")) endpoint.pop_back();
  } else {
    endpoint = absl::StrCat("https://s3.", region, ".amazonaws.com");
  }
  AwsCredentials credentials;
  if (!options.anonymous) {
    SHARDLOADER_ASSIGN_OR_RETURN(credentials, ResolveAwsCredentials(options.profile));
  }
  return std::shared_ptr<const S3Client>(new S3Client(options, std::move(transport),
                                                      std::move(endpoint), custom, region,
                                                      std::move(credentials), options.anonymous));
}

std::string S3Client::CanonicalUri(const S3Location& location) const {
  const bool path_style = path_style_ || absl::StrContains(location.bucket, '.');
  const std::string key = UriEncode(location.key, /*keep_slash=*/true);
  if (!path_style) return absl::StrCat("/", key);
  // The bucket itself is "/bucket", as the SDKs send it.
  return key.empty() ? absl::StrCat("/", location.bucket)
                     : absl::StrCat("/", location.bucket, "/", key);
}

std::string S3Client::Url(const S3Location& location, const std::string& query) const {
  std::string base = endpoint_;
  if (!path_style_ && !absl::StrContains(location.bucket, '.')) {
    base = absl::StrCat("https://", location.bucket, ".", absl::StripPrefix(endpoint_, "https://"));
  }
  return absl::StrCat(base, CanonicalUri(location), query.empty() ? "" : "?", query);
}

absl::Status S3Client::Sign(HttpRequest* request, const std::string& canonical_uri,
                            const std::string& canonical_query) const {
  if (anonymous_) return absl::OkStatus();
  absl::string_view host = request->url;
  absl::ConsumePrefix(&host, "http://") || absl::ConsumePrefix(&host, "https://");
  host = host.substr(0, host.find('/'));
  const std::string amz_date = AmzDate(absl::Now());
  SigV4Input input{.method = request->method,
                   .canonical_uri = canonical_uri,
                   .canonical_query = canonical_query,
                   .headers = {{"host", std::string(host)},
                               {"x-amz-date", amz_date},
                               {"x-amz-content-sha256", Sha256Hex(request->body)}},
                   .payload_sha256 = Sha256Hex(request->body)};
  if (!credentials_.session_token.empty()) {
    input.headers.emplace_back("x-amz-security-token", credentials_.session_token);
  }
  for (const auto& [name, value] : input.headers) {
    if (name != "host") request->headers.push_back(absl::StrCat(name, ": ", value));
  }
  const SigV4Key key{.access_key_id = credentials_.access_key_id,
                     .secret_access_key = credentials_.secret_access_key,
                     .region = region_,
                     .service = "s3"};
  request->headers.push_back(
      absl::StrCat("Authorization: ", SigV4Authorization(key, amz_date, input)));
  return absl::OkStatus();
}

RemoteTarget S3Client::ObjectTarget(const S3Location& location) const {
  return {.url = Url(location, ""),
          .authorize = [client = shared_from_this(), uri = CanonicalUri(location)](
                           HttpRequest* request) { return client->Sign(request, uri, ""); }};
}

absl::StatusOr<HttpResponse> S3Client::Call(const std::string& method, const S3Location& location,
                                            const QueryParams& query, std::string body) const {
  const std::string canonical_query = CanonicalQuery(query);
  const std::string canonical_uri = CanonicalUri(location);
  HttpResponse response;
  const absl::Status status = RunWithRetries(RetryPolicyOf(options_), [&] {
    HttpRequest request = BaseRequestOf(options_, method, Url(location, canonical_query));
    request.body = body;
    SHARDLOADER_RETURN_IF_ERROR(Sign(&request, canonical_uri, canonical_query));
    SHARDLOADER_RETURN_IF_ERROR(transport_->Perform(request, &response));
    return HttpStatusToStatus(request, response);
  });
  if (!status.ok()) {
    return WithContext(status, {.uri = absl::StrCat("s3://", location.bucket, "/", location.key)});
  }
  return response;
}

absl::StatusOr<std::vector<std::string>> S3Client::ListKeys(const std::string& bucket,
                                                            const std::string& prefix) const {
  std::vector<std::string> keys;
  std::string token;
  while (true) {
    QueryParams query = {{"list-type", "2"}, {"prefix", prefix}};
    if (!token.empty()) query.emplace_back("continuation-token", token);
    SHARDLOADER_ASSIGN_OR_RETURN(const HttpResponse response,
                                 Call("GET", S3Location{bucket, ""}, query));
    for (std::string& key : XmlValues(response.body, "Key")) keys.push_back(std::move(key));
    const std::vector<std::string> truncated = XmlValues(response.body, "IsTruncated");
    const std::vector<std::string> next = XmlValues(response.body, "NextContinuationToken");
    if (truncated.empty() || truncated[0] != "true" || next.empty()) break;
    token = next[0];
  }
  return keys;
}

}  // namespace shardloader

// S3Client through a scripted transport: ListObjectsV2 pagination, SigV4
// headers on every request (object reads included), anonymous requests, and
// S3 error documents. No server; credentials come from the environment,
// set for each test and restored after it.
#include "shardloader/io/remote/s3_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/remote/mock_http_transport.h"
#include "shardloader/io/remote/remote_source.h"
#include "shardloader/io/remote/sigv4.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

using ::shardloader::testing::HeaderValue;
using ::shardloader::testing::MockHttpTransport;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

constexpr char kEndpoint[] = "http://s3.mock.test:9000";
constexpr char kAccessKey[] = "AKIDMOCKEXAMPLE";
constexpr char kSecretKey[] = "mock/secret/key";

// Sets environment variables for its lifetime, then restores them.
class ScopedEnv {
 public:
  void Set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved_.push_back({name, old == nullptr ? std::nullopt : std::optional<std::string>(old)});
    if (value == nullptr) {
      ::unsetenv(name.c_str());
    } else {
      ::setenv(name.c_str(), value, 1);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

class S3ClientTest : public ::testing::Test {
 protected:
  S3ClientTest() {
    env_.Set("AWS_ACCESS_KEY_ID", kAccessKey);
    env_.Set("AWS_SECRET_ACCESS_KEY", kSecretKey);
    env_.Set("AWS_SESSION_TOKEN", nullptr);
    env_.Set("AWS_ENDPOINT_URL_S3", nullptr);
    env_.Set("AWS_ENDPOINT_URL", nullptr);
    options_.endpoint_url = kEndpoint;
    options_.region = "eu-mock-1";
    options_.initial_backoff = absl::Milliseconds(1);
    options_.max_backoff = absl::Milliseconds(1);
  }

  // Expects `request` to carry a SigV4 signature from the test's key, and
  // that it is the signature of the request as sent.
  void ExpectSigned(const HttpRequest& request, const std::string& canonical_uri,
                    const std::string& canonical_query) {
    SCOPED_TRACE(request.method + " " + request.url);
    const std::optional<std::string> date = HeaderValue(request, "x-amz-date");
    const std::optional<std::string> payload = HeaderValue(request, "x-amz-content-sha256");
    const std::optional<std::string> authorization = HeaderValue(request, "Authorization");
    ASSERT_TRUE(date && payload && authorization);
    EXPECT_THAT(*date, MatchesRegex("[0-9]{8}T[0-9]{6}Z"));
    EXPECT_EQ(*payload, Sha256Hex(request.body));
    EXPECT_THAT(*authorization,
                StartsWith(absl::StrCat("AWS4-HMAC-SHA256 Credential=", kAccessKey, "/",
                                        date->substr(0, 8), "/eu-mock-1/s3/aws4_request")));
    EXPECT_THAT(*authorization, HasSubstr("SignedHeaders=host;x-amz-content-sha256;x-amz-date"));
    const SigV4Key key{.access_key_id = kAccessKey,
                       .secret_access_key = kSecretKey,
                       .region = "eu-mock-1",
                       .service = "s3"};
    const SigV4Input input{.method = request.method,
                           .canonical_uri = canonical_uri,
                           .canonical_query = canonical_query,
                           .headers = {{"host", "s3.mock.test:9000"},
                                       {"x-amz-date", *date},
                                       {"x-amz-content-sha256", *payload}},
                           .payload_sha256 = *payload};
    EXPECT_EQ(*authorization, SigV4Authorization(key, *date, input));
    EXPECT_EQ(authorization->find(kSecretKey), std::string::npos);
  }

  ScopedEnv env_;
  SourceOptions options_;
  const std::shared_ptr<MockHttpTransport> transport_ = std::make_shared<MockHttpTransport>();
};

TEST_F(S3ClientTest, ListPrefixFollowsContinuationTokensAcrossPages) {
  const std::string first = absl::StrCat(kEndpoint, "/bucket?list-type=2&prefix=data%2F");
  const std::string second =
      absl::StrCat(kEndpoint, "/bucket?continuation-token=page%2B2%3D&list-type=2&prefix=data%2F");
  transport_->Script(first, {.status = 200,
                             .body = "<ListBucketResult><IsTruncated>true</IsTruncated>"
                                     "<Contents><Key>data/a.tar</Key></Contents>"
                                     "<Contents><Key>data/b.tar</Key></Contents>"
                                     "<NextContinuationToken>page+2=</NextContinuationToken>"
                                     "</ListBucketResult>"});
  transport_->Script(second, {.status = 200,
                              .body = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                                      "<Contents><Key>data/c&amp;d.tar</Key></Contents>"
                                      "</ListBucketResult>"});
  const absl::StatusOr<std::vector<std::string>> keys =
      ListS3Prefix("s3://bucket/data/", options_, transport_);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_THAT(*keys, ElementsAre("s3://bucket/data/a.tar", "s3://bucket/data/b.tar",
                                 "s3://bucket/data/c&d.tar"));
  const std::vector<HttpRequest> requests = transport_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].url, first);
  EXPECT_EQ(requests[1].url, second);
  ExpectSigned(requests[0], "/bucket", "list-type=2&prefix=data%2F");
  ExpectSigned(requests[1], "/bucket", "continuation-token=page%2B2%3D&list-type=2&prefix=data%2F");
}

TEST_F(S3ClientTest, ListingRetriesThrottlingAndMapsErrorDocuments) {
  const std::string url = absl::StrCat(kEndpoint, "/bucket?list-type=2&prefix=");
  transport_->FailNext(url, 1, 503, "<Error><Code>SlowDown</Code></Error>");
  transport_->FailNext(url, 1, 403, "<Error><Code>SignatureDoesNotMatch</Code></Error>");
  const absl::StatusOr<std::vector<std::string>> keys =
      ListS3Prefix("s3://bucket", options_, transport_);
  EXPECT_EQ(keys.status().code(), absl::StatusCode::kPermissionDenied) << keys.status();
  EXPECT_THAT(keys.status().message(), HasSubstr("SignatureDoesNotMatch"));
  EXPECT_EQ(GetContext(keys.status()).uri, "s3://bucket/");
  EXPECT_EQ(transport_->requests().size(), 2u);
}

TEST_F(S3ClientTest, ObjectRequestsAreSignedPathStyle) {
  const std::string url = absl::StrCat(kEndpoint, "/bucket/dir/shard%20one.tar");
  transport_->PutObject(url, "0123456789");
  absl::StatusOr<std::shared_ptr<RemoteObject>> object =
      OpenRemoteObject("s3://bucket/dir/shard one.tar", options_, transport_);
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ((*object)->size(), 10);
  transport_->FailNext(url, 1, 500);  // each attempt is signed afresh
  char got[4];
  ASSERT_TRUE((*object)->ReadRange(3, 4, got).ok());
  EXPECT_EQ(std::string(got, 4), "3456");
  const std::vector<HttpRequest> requests = transport_->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "HEAD");
  for (const HttpRequest& request : requests) {
    EXPECT_EQ(request.url, url);
    EXPECT_FALSE(request.follow_redirects);  // signed requests never follow
    ExpectSigned(request, "/bucket/dir/shard%20one.tar", "");
  }
  EXPECT_EQ(HeaderValue(requests[2], "Range"), "bytes=3-6");
}

TEST_F(S3ClientTest, SessionTokenIsSentAndSigned) {
  env_.Set("AWS_SESSION_TOKEN", "mock-session-token");
  const std::string url = absl::StrCat(kEndpoint, "/bucket/key");
  transport_->PutObject(url, "x");
  ASSERT_TRUE(OpenRemoteObject("s3://bucket/key", options_, transport_).ok());
  const HttpRequest head = transport_->requests().at(0);
  EXPECT_EQ(HeaderValue(head, "x-amz-security-token"), "mock-session-token");
  EXPECT_THAT(HeaderValue(head, "Authorization").value_or(""),
              HasSubstr("SignedHeaders=host;x-amz-content-sha256;x-amz-date;"
                        "x-amz-security-token"));
}

TEST_F(S3ClientTest, AnonymousRequestsCarryNoSignature) {
  options_.anonymous = true;
  env_.Set("AWS_ACCESS_KEY_ID", nullptr);
  env_.Set("AWS_SECRET_ACCESS_KEY", nullptr);
  const std::string url = absl::StrCat(kEndpoint, "/public/key");
  transport_->PutObject(url, "abc");
  ASSERT_TRUE(OpenRemoteObject("s3://public/key", options_, transport_).ok());
  const HttpRequest head = transport_->requests().at(0);
  EXPECT_EQ(HeaderValue(head, "Authorization"), std::nullopt);
  EXPECT_EQ(HeaderValue(head, "x-amz-date"), std::nullopt);
}

TEST_F(S3ClientTest, VirtualHostedOnAwsWithoutACustomEndpoint) {
  options_.endpoint_url.clear();
  absl::StatusOr<std::shared_ptr<const S3Client>> client = S3Client::Create(options_, transport_);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->ObjectTarget({"bucket", "a/b.tar"}).url,
            "https://bucket.s3.eu-mock-1.amazonaws.com/a/b.tar");
  EXPECT_EQ((*client)->transport(), transport_);
  EXPECT_TRUE(transport_->requests().empty());
}

TEST_F(S3ClientTest, MissingKeyIsNotFoundNamingTheS3Uri) {
  const absl::StatusOr<std::shared_ptr<RemoteObject>> object =
      OpenRemoteObject("s3://bucket/missing.tar", options_, transport_);
  EXPECT_EQ(object.status().code(), absl::StatusCode::kNotFound) << object.status();
  EXPECT_THAT(object.status().message(), HasSubstr("NoSuchKey"));
  EXPECT_EQ(GetContext(object.status()).uri, "s3://bucket/missing.tar");
  EXPECT_EQ(transport_->requests().size(), 1u);
}

}  // namespace
}  // namespace shardloader

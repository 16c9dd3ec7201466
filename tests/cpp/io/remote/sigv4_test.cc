// SigV4 against the worked example in AWS's S3 documentation
// ("Examples: Signature Calculations in AWS Signature Version 4",
// GET Object with a Range header), plus the encoding rules it depends on.
#include "shardloader/io/remote/sigv4.h"

#include <gtest/gtest.h>

namespace shardloader {
namespace {

TEST(SigV4Test, MatchesTheDocumentedGetObjectExample) {
  const SigV4Input input{.method = "GET",
                         .canonical_uri = "/test.txt",
                         .canonical_query = "",
                         .headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                                     {"Range", "bytes=0-9"},
                                     {"x-amz-content-sha256", Sha256Hex("")},
                                     {"x-amz-date", "20130524T000000Z"}},
                         .payload_sha256 = Sha256Hex("")};
  const SigV4Key key{.access_key_id = "AKIAIOSFODNN7EXAMPLE",
                     .secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                     .region = "us-east-1",
                     .service = "s3"};
  EXPECT_EQ(SigV4Authorization(key, "20130524T000000Z", input),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
            "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4Test, EmptyPayloadHash) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(SigV4Test, UriEncodingKeepsUnreservedAndOptionallySlash) {
  EXPECT_EQ(UriEncode("a b+c/d~e_f.g-h", true), "a%20b%2Bc/d~e_f.g-h");
  EXPECT_EQ(UriEncode("train/", false), "train%2F");
  EXPECT_EQ(UriEncode("\xC3\xA9", true), "%C3%A9");
}

TEST(SigV4Test, CanonicalQuerySortsAndEncodes) {
  EXPECT_EQ(CanonicalQuery({{"prefix", "train/a b"}, {"list-type", "2"}}),
            "list-type=2&prefix=train%2Fa%20b");
  EXPECT_EQ(CanonicalQuery({{"uploads", ""}}), "uploads=");
}

TEST(SigV4Test, AmzDateIsUtc) {
  EXPECT_EQ(AmzDate(absl::FromUnixSeconds(1369353600)), "20130524T000000Z");
}

}  // namespace
}  // namespace shardloader

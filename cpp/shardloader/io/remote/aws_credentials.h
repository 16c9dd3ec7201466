// AWS credentials and region, found the way the AWS CLI and SDKs find them
// ("Configuration and credential file settings",
// https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html):
//
//   1. AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN);
//   2. the profile's section in the shared credentials file
//      (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials);
//   3. the profile's section in the config file (AWS_CONFIG_FILE, else
//      ~/.aws/config; "[profile NAME]", or "[default]").
// The profile is the one asked for, else AWS_PROFILE, else "default".
// Region: the one asked for, else AWS_REGION, AWS_DEFAULT_REGION, the
// profile's "region" in the config file, else us-east-1.
//
// Secrets: AwsCredentials has no printer; no error here quotes a key.
// Thread-safety: pure functions (they read the environment and files).
#ifndef SHARDLOADER_IO_REMOTE_AWS_CREDENTIALS_H_
#define SHARDLOADER_IO_REMOTE_AWS_CREDENTIALS_H_

#include <string>

#include "absl/status/statusor.h"

namespace shardloader {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
};

// Errors: PermissionDenied when no credentials are found anywhere (the
// message lists where it looked; anonymous access is the caller's choice),
// NotFound when a profile was named but no file has it.
absl::StatusOr<AwsCredentials> ResolveAwsCredentials(const std::string& profile);

// The region to sign for (never fails: us-east-1 at the end).
std::string ResolveAwsRegion(const std::string& region, const std::string& profile);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_AWS_CREDENTIALS_H_

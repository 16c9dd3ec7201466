#include "shardloader/io/remote/aws_credentials.h"

#include <cstdlib>
#include <fstream>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace shardloader {
namespace {

using Section = absl::flat_hash_map<std::string, std::string>;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string HomeFile(const char* variable, const char* relative) {
  std::string path = Env(variable);
  if (!path.empty()) return path;
  const std::string home = Env("HOME");
  return home.empty() ? std::string() : absl::StrCat(home, "/", relative);
}

// The "key = value" lines of section `[name]` of an INI file, if present.
std::optional<Section> ReadSection(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::optional<Section> section;
  bool inside = false;
  std::string line;
  while (std::getline(in, line)) {
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#' || text[0] == ';') continue;
    if (text.front() == '[' && text.back() == ']') {
      inside = absl::StripAsciiWhitespace(text.substr(1, text.size() - 2)) == name;
      if (inside && !section) section.emplace();
      continue;
    }
    const size_t equals = text.find('=');
    if (!inside || equals == absl::string_view::npos) continue;
    (*section)[absl::AsciiStrToLower(absl::StripAsciiWhitespace(text.substr(0, equals)))] =
        std::string(absl::StripAsciiWhitespace(text.substr(equals + 1)));
  }
  return section;
}

std::string ProfileName(const std::string& profile) {
  if (!profile.empty()) return profile;
  const std::string env = Env("AWS_PROFILE");
  return env.empty() ? "default" : env;
}

std::optional<Section> ConfigSection(const std::string& profile) {
  const std::string path = HomeFile("AWS_CONFIG_FILE", ".aws/config");
  return ReadSection(path, profile == "default" ? profile : absl::StrCat("profile ", profile));
}

std::optional<AwsCredentials> FromSection(const std::optional<Section>& section) {
  if (!section) return std::nullopt;
  const auto id = section->find("aws_access_key_id");
  const auto secret = section->find("aws_secret_access_key");
  if (id == section->end() || secret == section->end()) return std::nullopt;
  AwsCredentials credentials{id->second, secret->second, ""};
  const auto token = section->find("aws_session_token");
  if (token != section->end()) credentials.session_token = token->second;
  return credentials;
}

}  // namespace

absl::StatusOr<AwsCredentials> ResolveAwsCredentials(const std::string& profile) {
  const bool named = !profile.empty() || !Env("AWS_PROFILE").empty();
  if (!named && !Env("AWS_ACCESS_KEY_ID").empty() && !Env("AWS_SECRET_ACCESS_KEY").empty()) {
    return AwsCredentials{Env("AWS_ACCESS_KEY_ID"), Env("AWS_SECRET_ACCESS_KEY"),
                          Env("AWS_SESSION_TOKEN")};
  }
  const std::string name = ProfileName(profile);
  const std::string credentials_path = HomeFile("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  const std::optional<Section> shared = ReadSection(credentials_path, name);
  if (std::optional<AwsCredentials> found = FromSection(shared)) return *found;
  const std::optional<Section> config = ConfigSection(name);
  if (std::optional<AwsCredentials> found = FromSection(config)) return *found;
  if (named && !shared && !config) {
    return absl::NotFoundError(absl::StrCat("AWS profile '", name, "' is in neither ",
                                            credentials_path, " nor the config file"));
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
      "add profile '",
      name, "' to ", credentials_path, " (or read a public bucket with anonymous=True)"));
}

std::string ResolveAwsRegion(const std::string& region, const std::string& profile) {
  if (!region.empty()) return region;
  for (const char* variable : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    std::string value = Env(variable);
    if (!value.empty()) return value;
  }
  const std::optional<Section> config = ConfigSection(ProfileName(profile));
  if (config) {
    const auto it = config->find("region");
    if (it != config->end() && !it->second.empty()) return it->second;
  }
  return "us-east-1";
}

}  // namespace shardloader

#include "shardloader/internal/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"

namespace shardloader {

Sha256Hasher::Sha256Hasher() : context_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(context_, EVP_sha256(), nullptr);
}

Sha256Hasher::~Sha256Hasher() { EVP_MD_CTX_free(context_); }

void Sha256Hasher::Update(absl::string_view data) {
  EVP_DigestUpdate(context_, data.data(), data.size());
}

std::string Sha256Hasher::Digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context_, digest, &length);
  return std::string(reinterpret_cast<char*>(digest), length);
}

std::string Sha256(absl::string_view data) {
  Sha256Hasher hasher;
  hasher.Update(data);
  return hasher.Digest();
}

std::string Sha256Hex(absl::string_view data) { return absl::BytesToHexString(Sha256(data)); }

}  // namespace shardloader

// SHA-256 through OpenSSL's EVP interface, one-shot or incremental.
//
// Ownership: Sha256Hasher owns its OpenSSL context. Thread-safety: the
// function is pure; a hasher is thread-compatible.
#ifndef SHARDLOADER_INTERNAL_SHA256_H_
#define SHARDLOADER_INTERNAL_SHA256_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

struct evp_md_ctx_st;

namespace shardloader {

class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(absl::string_view data);
  // The 32-byte digest of everything passed to Update(); call once.
  std::string Digest();

 private:
  evp_md_ctx_st* context_;
};

// Raw 32-byte digest, and its lower-case hex form.
std::string Sha256(absl::string_view data);
std::string Sha256Hex(absl::string_view data);

}  // namespace shardloader

#endif  // SHARDLOADER_INTERNAL_SHA256_H_

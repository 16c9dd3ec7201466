#include "shardloader/io/byte_sink.h"

namespace shardloader {
namespace {

class Forwarding final : public ByteSink {
 public:
  explicit Forwarding(ByteSink* target) : target_(target) {}
  absl::Status Write(absl::string_view data) override { return target_->Write(data); }

 private:
  ByteSink* target_;
};

}  // namespace

std::unique_ptr<ByteSink> ForwardingSink(ByteSink* target) {
  return std::make_unique<Forwarding>(target);
}

}  // namespace shardloader

// Fuzz target: HTTP responses (io/remote/remote_object) and S3 XML listings
// (io/remote/s3_client) through an in-target fake HttpTransport.
//
// The input is text: a first line naming what is driven, then the answers
// the fake server gives, in order, separated by "\n--\n":
//
//   http | s3 | list
//   <status>[ cut <n>]        or: error
//   header-name: value
//   ...
//   <empty line>
//   body
//   --
//   <next answer> ...
//
// "http": RemoteObject::Open (HEAD) on a plain URL, then ReadRange at the
// start, the middle, the last byte, past the end and a larger span. "s3":
// the same through S3Client::ObjectTarget. "list": S3Client::ListKeys,
// which follows continuation tokens. A 2xx body goes into the request's
// sink as CurlTransport does (DataLoss past its capacity); "cut <n>" drops
// the connection after n bytes; "error" fails the transfer; once the
// answers run out every transfer fails (Unavailable), which ends retries
// and listings.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shardloader/io/remote/http_transport.h"
#include "shardloader/io/remote/remote_object.h"
#include "shardloader/io/remote/s3_client.h"
#include "shardloader/io/source_options.h"

namespace {

struct Answer {
  bool transport_error = false;
  long status = 0;
  int64_t cut_after = -1;  // -1: the whole body
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

Answer ParseAnswer(absl::string_view text) {
  Answer answer;
  const size_t head_end = text.find("\n\n");
  const absl::string_view head = text.substr(0, head_end);
  if (head_end != absl::string_view::npos) answer.body = std::string(text.substr(head_end + 2));
  bool first = true;
  for (absl::string_view line : absl::StrSplit(head, '\n')) {
    if (first) {
      first = false;
      std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (!words.empty() && words[0] == "error") answer.transport_error = true;
      if (!words.empty()) (void)absl::SimpleAtoi(words[0], &answer.status);
      if (words.size() >= 3 && words[1] == "cut")
        (void)absl::SimpleAtoi(words[2], &answer.cut_after);
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    answer.headers.emplace_back(absl::AsciiStrToLower(line.substr(0, colon)),
                                std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  }
  return answer;
}

class FakeTransport final : public shardloader::HttpTransport {
 public:
  explicit FakeTransport(std::vector<Answer> answers) : answers_(std::move(answers)) {}

  absl::Status Perform(const shardloader::HttpRequest& request,
                       shardloader::HttpResponse* response) override {
    *response = shardloader::HttpResponse();
    if (next_ >= answers_.size()) return absl::UnavailableError("fake: no more answers");
    const Answer& answer = answers_[next_++];
    if (answer.transport_error) return absl::UnavailableError("fake: transfer failed");
    response->status_code = answer.status;
    for (const auto& [name, value] : answer.headers) response->headers[name] = value;
    const absl::string_view body = answer.body;
    const size_t n = answer.cut_after < 0
                         ? body.size()
                         : std::min(body.size(), static_cast<size_t>(answer.cut_after));
    const bool success = answer.status >= 200 && answer.status < 300;
    if (success && request.sink != nullptr) {
      if (body.size() > request.sink_capacity) return absl::DataLossError("fake: body too long");
      std::memcpy(request.sink, body.data(), n);
      response->sink_bytes = n;
    } else {
      response->body = std::string(body.substr(0, std::min<size_t>(n, 64 << 10)));
    }
    if (n < body.size()) return absl::UnavailableError("fake: connection closed");
    return absl::OkStatus();
  }

 private:
  std::vector<Answer> answers_;
  size_t next_ = 0;
};

shardloader::SourceOptions FastOptions() {
  shardloader::SourceOptions options;
  options.max_attempts = 3;
  options.initial_backoff = absl::Microseconds(1);
  options.max_backoff = absl::Microseconds(1);
  options.endpoint_url = "http://s3.fuzz.test:9000";
  options.region = "us-east-1";
  options.anonymous = true;
  return options;
}

void ReadSome(const shardloader::RemoteObject& object) {
  const int64_t size = object.size();
  const int64_t kMax = int64_t{1} << 16;
  const std::pair<int64_t, int64_t> ranges[] = {
      {0, std::min<int64_t>(size, 64)},
      {size / 2, std::min<int64_t>(size - size / 2, 100)},
      {size - 1, 1},
      {size, 1},
      {0, std::min(size, kMax)},
  };
  for (const auto& [offset, length] : ranges) {
    if (length < 0 || length > kMax) continue;
    std::string buffer(static_cast<size_t>(length), '\0');
    (void)object.ReadRange(offset, buffer.size(), buffer.data());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t mode_end = std::min(input.find('\n'), input.size());
  const absl::string_view mode = input.substr(0, mode_end);
  std::vector<Answer> answers;
  if (mode_end < input.size()) {
    for (absl::string_view text : absl::StrSplit(input.substr(mode_end + 1), "\n--\n")) {
      answers.push_back(ParseAnswer(text));
    }
  }
  auto transport = std::make_shared<FakeTransport>(std::move(answers));
  const shardloader::SourceOptions options = FastOptions();

  if (mode == "list" || mode == "s3") {
    absl::StatusOr<std::shared_ptr<const shardloader::S3Client>> client =
        shardloader::S3Client::Create(options, transport);
    if (!client.ok()) std::abort();  // the options above are valid
    if (mode == "list") {
      (void)(*client)->ListKeys("bucket", "data/");
      return 0;
    }
    absl::StatusOr<std::shared_ptr<shardloader::RemoteObject>> object =
        shardloader::RemoteObject::Open("s3://bucket/data/shard-0.tar",
                                        (*client)->ObjectTarget({"bucket", "data/shard-0.tar"}),
                                        options, transport);
    if (object.ok()) ReadSome(**object);
    return 0;
  }
  absl::StatusOr<std::shared_ptr<shardloader::RemoteObject>> object =
      shardloader::RemoteObject::Open("https://example.test/shard-0.tar",
                                      {.url = "https://example.test/shard-0.tar"}, options,
                                      transport);
  if (object.ok()) ReadSome(**object);
  return 0;
}

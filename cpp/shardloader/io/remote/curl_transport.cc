#include "shardloader/io/remote/curl_transport.h"

#include <curl/curl.h>
#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "shardloader/internal/fork_safety.h"

namespace shardloader {
namespace {

constexpr size_t kMaxErrorBodyBytes = 64 << 10;

// One request in flight: what the event loop needs to run it and report back.
struct Transfer {
  const HttpRequest* request;
  HttpResponse* response;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  CURLcode result = CURLE_OK;
  bool overflow = false;  // the body passed the sink's capacity
  char error[CURL_ERROR_SIZE] = {};
  absl::Notification done;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t n = size * count;
  absl::string_view line(data, n);
  if (absl::StartsWith(line, "HTTP/")) {
    // A new response (after a redirect or "100 Continue"): start afresh.
    transfer->response->headers.clear();
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return n;
  std::string name = absl::AsciiStrToLower(line.substr(0, colon));
  transfer->response->headers[name] =
      std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  return n;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t n = size * count;
  long code = 0;
  curl_easy_getinfo(transfer->easy, CURLINFO_RESPONSE_CODE, &code);
  HttpResponse& response = *transfer->response;
  const HttpRequest& request = *transfer->request;
  if (code >= 200 && code < 300 && request.sink != nullptr) {
    if (response.sink_bytes + n > request.sink_capacity) {
      transfer->overflow = true;
      return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    std::memcpy(request.sink + response.sink_bytes, data, n);
    response.sink_bytes += n;
    return n;
  }
  const bool success = code >= 200 && code < 300;
  const size_t room =
      success ? n : kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, response.body.size());
  response.body.append(data, std::min(n, room));
  return n;
}

// The URL up to its query string: query strings may carry signatures.
absl::string_view WithoutQuery(const std::string& url) {
  return absl::string_view(url).substr(0, url.find('?'));
}

absl::Status TransferStatus(const Transfer& transfer) {
  const std::string where =
      absl::StrCat(transfer.request->method, " ", WithoutQuery(transfer.request->url));
  const std::string detail =
      transfer.error[0] != '\0' ? transfer.error : curl_easy_strerror(transfer.result);
  switch (transfer.result) {
    case CURLE_OK:
      return absl::OkStatus();
    case CURLE_WRITE_ERROR:
      if (transfer.overflow) {
        return absl::DataLossError(
            absl::StrCat(where, ": the server sent more bytes than were asked for (",
                         transfer.request->sink_capacity, ")"));
      }
      break;
    case CURLE_OPERATION_TIMEDOUT:
      return absl::DeadlineExceededError(absl::StrCat(where, ": timed out (", detail, ")"));
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", detail));
    case CURLE_SSL_CACERT_BADFILE:
      return absl::InvalidArgumentError(absl::StrCat(where, ": cannot load the CA certificates (",
                                                     detail, "); check SourceOptions.ca_bundle"));
    case CURLE_PEER_FAILED_VERIFICATION:
      // Not retried: an untrusted certificate stays untrusted.
      return absl::PermissionDeniedError(
          absl::StrCat(where, ": the server's TLS certificate is not trusted (", detail,
                       "); SourceOptions.ca_bundle names the CA file to trust"));
    default:
      break;
  }
  return absl::UnavailableError(absl::StrCat(where, ": ", detail));
}

}  // namespace

struct CurlTransport::Impl {
  CURLM* multi = nullptr;
  absl::Mutex mu;
  std::deque<Transfer*> incoming ABSL_GUARDED_BY(mu);
  std::vector<CURL*> idle_handles ABSL_GUARDED_BY(mu);  // reused: DNS, TLS sessions

  CURL* TakeHandle() {
    absl::MutexLock lock(&mu);
    if (idle_handles.empty()) return curl_easy_init();
    CURL* easy = idle_handles.back();
    idle_handles.pop_back();
    curl_easy_reset(easy);
    return easy;
  }

  void ReturnHandle(CURL* easy) {
    absl::MutexLock lock(&mu);
    idle_handles.push_back(easy);
  }

  void Configure(Transfer* transfer) {
    const HttpRequest& request = *transfer->request;
    CURL* easy = transfer->easy;
    curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer->error);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, transfer);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &OnHeader);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, transfer);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, transfer);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    if (!request.ca_bundle.empty()) {
      curl_easy_setopt(easy, CURLOPT_CAINFO, request.ca_bundle.c_str());
    }
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(request.connect_timeout)));
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT,
                     static_cast<long>(request.low_speed_bytes_per_s));
    curl_easy_setopt(
        easy, CURLOPT_LOW_SPEED_TIME,
        static_cast<long>(std::max<int64_t>(1, absl::ToInt64Seconds(request.low_speed_time))));
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
    if (request.method == "HEAD") {
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else if (request.method != "GET") {
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    if (request.method == "PUT" || request.method == "POST") {
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
    }
    curl_slist* headers = nullptr;
    for (const std::string& header : request.headers) {
      headers = curl_slist_append(headers, header.c_str());
    }
    // No "Expect: 100-continue" round trip; no default form content type.
    headers = curl_slist_append(headers, "Expect:");
    if (request.method == "PUT" || request.method == "POST") {
      headers = curl_slist_append(headers, "Content-Type:");
    }
    transfer->headers = headers;
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  }

  void Loop() {
    while (true) {
      {
        absl::MutexLock lock(&mu);
        while (!incoming.empty()) {
          curl_multi_add_handle(multi, incoming.front()->easy);
          incoming.pop_front();
        }
      }
      int running = 0;
      curl_multi_perform(multi, &running);
      int left = 0;
      while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
        if (message->msg != CURLMSG_DONE) continue;
        Transfer* transfer = nullptr;
        curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &transfer);
        transfer->result = message->data.result;
        curl_multi_remove_handle(multi, message->easy_handle);
        transfer->done.Notify();
      }
      curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
  }
};

namespace {

// The shared transport. Its event-loop thread exists only in the process
// that started it, so a child forked from that process gets a transport of
// its own (the parent's, with its sockets, is left alone: it is the
// parent's). The atfork handlers hold shared_mu across fork(), so the child
// never inherits it locked.
absl::Mutex shared_mu(absl::kConstInit);
CurlTransport* shared_transport ABSL_GUARDED_BY(shared_mu) = nullptr;

void LockShared() ABSL_NO_THREAD_SAFETY_ANALYSIS { shared_mu.Lock(); }
void UnlockShared() ABSL_NO_THREAD_SAFETY_ANALYSIS { shared_mu.Unlock(); }
void ForgetSharedInChild() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  shared_transport = nullptr;  // never freed: the parent's threads own its state
  internal_fork::ResetMutexInChild(shared_mu);
}

}  // namespace

CurlTransport& CurlTransport::Shared() {
  absl::MutexLock lock(&shared_mu);
  if (shared_transport == nullptr) {
    static bool initialised = false;  // libcurl's global state survives fork()
    if (!initialised) {
      curl_global_init(CURL_GLOBAL_DEFAULT);
      pthread_atfork(&LockShared, &UnlockShared, &ForgetSharedInChild);
      initialised = true;
    }
    shared_transport = new CurlTransport();
  }
  return *shared_transport;
}

std::shared_ptr<HttpTransport> DefaultHttpTransport() {
  // Aliases the never-destroyed shared transport; owns nothing.
  return std::shared_ptr<HttpTransport>(std::shared_ptr<void>(), &CurlTransport::Shared());
}

CurlTransport::CurlTransport() : impl_(new Impl) {
  impl_->multi = curl_multi_init();
  curl_multi_setopt(impl_->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, 256L);
  std::thread([impl = impl_] { impl->Loop(); }).detach();
}

absl::Status CurlTransport::Perform(const HttpRequest& request, HttpResponse* response) {
  *response = HttpResponse();
  Transfer transfer{.request = &request, .response = response};
  transfer.easy = impl_->TakeHandle();
  impl_->Configure(&transfer);
  {
    absl::MutexLock lock(&impl_->mu);
    impl_->incoming.push_back(&transfer);
  }
  curl_multi_wakeup(impl_->multi);
  transfer.done.WaitForNotification();
  curl_easy_getinfo(transfer.easy, CURLINFO_RESPONSE_CODE, &response->status_code);
  curl_slist_free_all(transfer.headers);
  impl_->ReturnHandle(transfer.easy);
  return TransferStatus(transfer);
}

}  // namespace shardloader

// BoundedQueue: a closable FIFO of bounded size between pipeline threads.
//
// Push blocks while the queue is full, Pop while it is empty; Close() wakes
// every waiter: later Pushes fail and Pops drain what is left, then return
// nullopt. Waits happen on an absl::Mutex condition, never holding the lock
// across anything but the queue operation itself.
//
// Thread-safety: thread-safe.
#ifndef SHARDLOADER_INTERNAL_BOUNDED_QUEUE_H_
#define SHARDLOADER_INTERNAL_BOUNDED_QUEUE_H_

#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shardloader::internal_pipeline {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // Appends `item`, waiting for room. Returns false if the queue was closed.
  bool Push(T item) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BoundedQueue::CanPush));
    if (closed_) return false;
    items_.push_back(std::move(item));
    return true;
  }

  // Removes the oldest item, waiting for one; nullopt once closed and empty.
  std::optional<T> Pop() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BoundedQueue::CanPop));
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Waits up to `timeout` until Pop() would not block; returns whether so.
  bool WaitPoppable(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(this, &BoundedQueue::CanPop), timeout);
  }

  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return items_.size();
  }

 private:
  bool CanPush() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || items_.size() < capacity_;
  }
  bool CanPop() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !items_.empty(); }

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<T> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_INTERNAL_BOUNDED_QUEUE_H_

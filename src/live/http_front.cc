// The HTTP front's accept loop, pool and deadlines (see http_front.h).
#include "live/http_front.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "live/log.h"

namespace fairgpu::live {
namespace {

// httplib keeps the listening socket in a protected member (read by the
// keep-alive loop of every connection: INVALID_SOCKET there ends it after
// its current request) ...
struct ServerAccess : httplib::Server {
  static std::atomic<socket_t>& listening(httplib::Server& s) {
    return s.*(&ServerAccess::svr_sock_);
  }
};

// ... and serves one accepted connection (TLS handshake included, for an
// SSLServer, by its override) in a private virtual function that its own
// accept loop calls. An explicit instantiation may name a private member
// ([temp.spec.general]/6): the pointer it yields is called here as httplib's
// loop would, dispatched to SSLServer's override for a TLS server.
using ProcessFn = bool (httplib::Server::*)(socket_t);
ProcessFn process_fn();
template <ProcessFn F>
struct ExposeProcess {
  friend ProcessFn process_fn() { return F; }
};
template struct ExposeProcess<&httplib::Server::process_and_close_socket>;

using Clock = std::chrono::steady_clock;
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}
constexpr std::int64_t kHandling = 0;  // deadline_ns while a handler runs
constexpr std::int64_t kCut = -1;      // deadline_ns once the watchdog cut it

std::string peer_address(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof text);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a6))  // one peer, whichever family it came in by
      inet_ntop(AF_INET, &a6.s6_addr[12], text, sizeof text);
    else
      inet_ntop(AF_INET6, &a6, text, sizeof text);
  }
  return text;
}

}  // namespace

struct Listener::Connection {
  int fd = -1;        // httplib's: it closes it
  int watch_fd = -1;  // a dup of ours, shut down when the deadline passes;
                      // never a number reused by someone else meanwhile
  std::string peer;
  std::int64_t timeout_ns = 0;
  std::atomic<std::int64_t> deadline_ns{0};
};

namespace {
thread_local Listener::Connection* t_current = nullptr;
}

Listener::Handling::Handling() {
  if (!t_current) return;
  std::int64_t d = t_current->deadline_ns.load();
  // Lost to the watchdog (it cut the connection at the deadline): the
  // answer will not get through; the handler's work is done all the same.
  while (d != kCut && !t_current->deadline_ns.compare_exchange_weak(d, kHandling)) {
  }
  cut_ = d == kCut;
}

Listener::Handling::~Handling() { answered(); }

void Listener::answered() {
  if (!t_current) return;
  std::int64_t d = t_current->deadline_ns.load();
  while (d != kCut &&
         !t_current->deadline_ns.compare_exchange_weak(d, now_ns() + t_current->timeout_ns)) {
  }
}

Listener::Listener(httplib::Server& server, const HttpLimits& limits, std::string name, bool tls)
    : server_(server),
      limits_(limits),
      name_(std::move(name)),
      tls_(tls),
      listen_fd_(ServerAccess::listening(server)) {
  // httplib listens with a backlog of 5: a burst of connections (an attack
  // being refused, or many agents at once) would wait for SYN retries.
  if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
}

Listener::~Listener() {
  stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void Listener::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  // Wakes the accept loop; the socket is closed when it has returned (its
  // number is not handed to anyone else while it may still be polled).
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  // Connections end after their current request (httplib's keep-alive loop).
  ServerAccess::listening(server_).store(INVALID_SOCKET);
  work_cv_.notify_all();
}

void Listener::run() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || listen_fd_ < 0) return;
    for (int i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { work(); });
    watchdog_ = std::thread([this] { watch(); });
  }
  const auto timeout_ns = static_cast<std::int64_t>(limits_.request_timeout_s * 1e9);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) break;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    sockaddr_storage addr{};
    socklen_t length = sizeof addr;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: let connections end rather than spin.
      if (errno == EMFILE || errno == ENFILE)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    // As httplib's own loop: a bound on each read and write, no Nagle delay.
    timeval tv{CPPHTTPLIB_READ_TIMEOUT_SECOND, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    tv = {CPPHTTPLIB_WRITE_TIMEOUT_SECOND, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);

    auto c = std::make_shared<Connection>();
    c->fd = fd;
    c->peer = peer_address(addr);
    c->timeout_ns = timeout_ns;
    c->deadline_ns = now_ns() + timeout_ns;
    std::unique_lock lock(mutex_);
    int& held = per_peer_[c->peer];
    const char* why = nullptr;
    std::shared_ptr<Connection> evicted;
    if (held >= limits_.max_connections_per_peer) {
      why = "too many connections from this address";
    } else if (queue_.size() >= static_cast<std::size_t>(limits_.queue)) {
      // Full: the place of the newest connection of the address holding
      // the most, if that is more than this one's would be.
      auto victim = queue_.end();
      int most = held;
      for (auto it = queue_.begin(); it != queue_.end(); ++it)
        if (int n = per_peer_[(*it)->peer]; n > most || (n == most && victim != queue_.end()))
          most = n, victim = it;
      if (victim == queue_.end()) {
        why = "the server is busy";
      } else {
        evicted = std::move(*victim);
        queue_.erase(victim);
        drop(evicted->peer);
        ::close(evicted->watch_fd);
      }
    }
    if (!why && (c->watch_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
      why = "the server is out of file descriptors";
    if (why) {
      if (held == 0) per_peer_.erase(c->peer);
      ++refused_;
      lock.unlock();
      refuse(fd, why);
      continue;
    }
    ++held;
    queue_.push_back(std::move(c));
    if (evicted) ++refused_;
    lock.unlock();
    work_cv_.notify_one();
    if (evicted) refuse(evicted->fd, "the server is busy");
  }
  for (auto& t : workers_) t.join();
  {
    std::lock_guard lock(mutex_);
    workers_.clear();
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  watch_cv_.notify_all();
  watchdog_.join();
}

void Listener::refuse(int fd, const std::string& why) {
  // Plain http gets a reason; a TLS peer cannot be answered before a
  // handshake, which is what is being refused.
  if (!tls_) {
    const std::string body = fmt::format("{{\"error\": \"{}; try again later\"}}\n", why);
    const std::string answer = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Connection: close\r\nContent-Length: {}\r\n\r\n{}",
        body.size(), body);
    [[maybe_unused]] auto sent =
        ::send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
  }
  ::close(fd);
}

void Listener::work() {
  for (;;) {
    std::shared_ptr<Connection> c;
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to close
      // Addresses take turns: the first connection of the address whose
      // last turn is the oldest (0: none yet). One client is not kept
      // waiting behind many of another, nor starved by more addresses than
      // workers.
      auto next = queue_.begin();
      std::uint64_t oldest = UINT64_MAX;
      for (auto it = queue_.begin(); it != queue_.end() && oldest > 0; ++it) {
        auto t = last_turn_.find((*it)->peer);
        if (std::uint64_t n = t == last_turn_.end() ? 0 : t->second; n < oldest)
          oldest = n, next = it;
      }
      c = std::move(*next);
      queue_.erase(next);
      serving_.push_back(c);
      last_turn_[c->peer] = ++turns_;
    }
    serve(c);
    release(c);
  }
}

void Listener::serve(const std::shared_ptr<Connection>& c) {
  const std::int64_t d = c->deadline_ns.load();
  if (d == kCut || d < now_ns()) {  // its deadline passed in the queue
    ::close(c->fd);
    return;
  }
  t_current = c.get();
  try {
    (server_.*process_fn())(c->fd);  // reads, answers, closes c->fd
  } catch (const std::exception& e) {
    log::write(log::Level::kError, "http_connection_failed",
               {{"listener", name_}, {"error", e.what()}});
  }
  t_current = nullptr;
}

void Listener::release(const std::shared_ptr<Connection>& c) {
  std::lock_guard lock(mutex_);
  serving_.erase(std::find(serving_.begin(), serving_.end(), c));
  drop(c->peer);
  ::close(c->watch_fd);  // under the lock: the watchdog never sees it closed
}

void Listener::drop(const std::string& peer) {
  if (--per_peer_[peer] > 0) return;
  per_peer_.erase(peer);
  last_turn_.erase(peer);  // what is kept is bounded by the connections held
}

void Listener::watch() {
  auto logged = Clock::now();
  std::unique_lock lock(mutex_);
  for (;;) {
    watch_cv_.wait_for(lock, std::chrono::milliseconds(100));
    const std::int64_t now = now_ns();
    // Waited their whole deadline for a worker: closed, their places freed.
    for (auto it = queue_.begin(); it != queue_.end();) {
      std::shared_ptr<Connection>& c = *it;
      if (c->deadline_ns.load() >= now) {
        ++it;
        continue;
      }
      ::close(c->fd);
      ::close(c->watch_fd);
      drop(c->peer);
      ++cut_;
      it = queue_.erase(it);
    }
    // Still reading a request past its deadline: shut down, which ends the
    // worker's read at once (plain or TLS).
    for (const auto& c : serving_) {
      std::int64_t d = c->deadline_ns.load();
      if (d == kHandling || d == kCut || d >= now) continue;
      if (!c->deadline_ns.compare_exchange_strong(d, kCut)) continue;  // a handler began
      ::shutdown(c->watch_fd, SHUT_RDWR);
      ++cut_;
    }
    const bool done = stopping_ && workers_.empty();
    if ((refused_ || cut_) && (done || Clock::now() - logged > std::chrono::seconds(10))) {
      log::warn("http_connections_refused",
                {{"listener", name_},
                 {"refused", refused_},
                 {"cut_at_deadline", cut_},
                 {"why",
                  "over max_connections_per_peer or the queue, or a request not read "
                  "whole within request_timeout_s"}});
      refused_ = cut_ = 0;
      logged = Clock::now();
    }
    if (done) return;
  }
}

}  // namespace fairgpu::live

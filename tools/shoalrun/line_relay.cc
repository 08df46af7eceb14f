#include "line_relay.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace shoal::run {

void output_sink::write(std::string_view bytes) {
  while (!bytes.empty() && !broken) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n >= 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // Our stdout may be a non-blocking fd shared with whoever started us; wait for room.
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
    } else if (errno != EINTR) {
      broken = true;
    }
  }
}

line_relay::line_relay(output_sink* sink, std::string prefix, size_t max_line_bytes)
    : sink_(sink), prefix_(std::move(prefix)), max_line_bytes_(max_line_bytes > 0 ? max_line_bytes : 1) {}

void line_relay::append_line(std::string& out, std::string_view line) const {
  out.append(prefix_);
  out.append(line);
  out.push_back('\n');
}

void line_relay::feed(std::string_view bytes) {
  // pending_ holds no newline, so only the new bytes need scanning: no quadratic rescans when a PE
  // writes a long line in many small pieces.
  std::string out;
  size_t start = 0;
  for (size_t nl = bytes.find('\n'); nl != std::string_view::npos; nl = bytes.find('\n', start)) {
    std::string_view tail = bytes.substr(start, nl - start);
    if (pending_.empty()) {
      append_line(out, tail);
    } else {
      pending_.append(tail);
      append_line(out, pending_);
      pending_.clear();
    }
    start = nl + 1;
  }
  pending_.append(bytes.substr(start));

  size_t offset = 0;
  while (pending_.size() - offset >= max_line_bytes_) {
    size_t cut = max_line_bytes_;
    // Don't split a UTF-8 sequence: back up over continuation bytes (at most 3).
    for (int i = 0; i < 3 && cut > 1 && (static_cast<unsigned char>(pending_[offset + cut]) & 0xC0) == 0x80; ++i) --cut;
    append_line(out, std::string_view(pending_).substr(offset, cut));
    offset += cut;
  }
  pending_.erase(0, offset);

  if (!out.empty()) sink_->write(out);
}

void line_relay::finish() {
  if (pending_.empty()) return;
  std::string out;
  append_line(out, pending_);
  pending_.clear();
  sink_->write(out);
}

}  // namespace shoal::run

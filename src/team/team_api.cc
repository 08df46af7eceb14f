// The C entry points of <shoal/team.h>: forward to the default world's team table (world_teams), converting
// shoal::error into the C error contract (c_api::guarded). Splits return 0 or the error's code; a split or
// get_config the specification answers with a nonzero return (team_refusal) returns it in every error mode.
#include <cstdio>
#include <cstring>

#include "common/check.hpp"
#include "runtime/c_api.hpp"
#include "shoal/device_team.hpp"
#include "shoal/shoal.h"
#include "team/team.hpp"
#include "team/team_world.hpp"

namespace capi = shoal::detail::c_api;

namespace {

using capi::status_of;

shoal::detail::world_teams& teams_of(const char* call) { return shoal::detail::world_teams::of(capi::current(call)); }

/// capi::guarded for the calls that may be refused (team_refusal): a refusal is recorded and its code returned,
/// also in abort mode, where a warning line says why (team_refusal::warn); any other error follows the error mode.
template <class F>
int refusable(const char* call, F&& body) noexcept {
  try {
    body();
    return SHOAL_OK;
  } catch (const shoal::detail::team_refusal& e) {
    capi::record(e);
    if (e.warn() && !capi::errors_return()) std::fprintf(stderr, "shoal: warning: %s (returns nonzero)\n", e.what());
    return static_cast<int>(e.code());
  } catch (const shoal::error& e) {
    capi::report(e);
  } catch (const std::exception& e) {
    capi::report_unknown(call, e.what());
  }
  return status_of(false);
}

}  // namespace

extern "C" {

int shoal_team_my_pe(shoal_team_t team) {
  const char* call = "shoal_team_my_pe";
  return capi::guarded(
      call, [&] { return teams_of(call).table().my_pe(call, team); }, -1);
}

int shoal_team_n_pes(shoal_team_t team) {
  const char* call = "shoal_team_n_pes";
  return capi::guarded(
      call, [&] { return teams_of(call).table().n_pes(call, team); }, -1);
}

int shoal_team_get_config(shoal_team_t team, long config_mask, shoal_team_config_t* config) {
  const char* call = "shoal_team_get_config";
  return refusable(call, [&] { teams_of(call).table().get_config(call, team, config_mask, config); });
}

int shoal_team_translate_pe(shoal_team_t src_team, int src_pe, shoal_team_t dest_team) {
  const char* call = "shoal_team_translate_pe";
  return capi::guarded(
      call, [&] { return teams_of(call).table().translate_pe(call, src_team, src_pe, dest_team); }, -1);
}

int shoal_team_split_strided(shoal_team_t parent_team, int start, int stride, int size,
                             const shoal_team_config_t* config, long config_mask, shoal_team_t* new_team) {
  const char* call = "shoal_team_split_strided";
  if (new_team != nullptr) *new_team = SHOAL_TEAM_INVALID;
  return refusable(call, [&] {
    auto& t = teams_of(call);
    shoal_team_t made = t.table().split_strided(call, parent_team, start, stride, size, config, config_mask,
                                                new_team == nullptr, t.exchange(call));
    t.publish_device();
    *new_team = made;
  });
}

int shoal_team_split_2d(shoal_team_t parent_team, int xrange, const shoal_team_config_t* xaxis_config, long xaxis_mask,
                        shoal_team_t* xaxis_team, const shoal_team_config_t* yaxis_config, long yaxis_mask,
                        shoal_team_t* yaxis_team) {
  const char* call = "shoal_team_split_2d";
  if (xaxis_team != nullptr) *xaxis_team = SHOAL_TEAM_INVALID;
  if (yaxis_team != nullptr) *yaxis_team = SHOAL_TEAM_INVALID;
  return refusable(call, [&] {
    auto& t = teams_of(call);
    const char* null_out = xaxis_team == nullptr ? "xaxis_team" : yaxis_team == nullptr ? "yaxis_team" : nullptr;
    auto [x, y] = t.table().split_2d(call, parent_team, xrange, xaxis_config, xaxis_mask, yaxis_config, yaxis_mask,
                                     null_out, t.exchange(call));
    t.publish_device();
    *xaxis_team = x;
    *yaxis_team = y;
  });
}

void shoal_team_destroy(shoal_team_t team) {
  const char* call = "shoal_team_destroy";
  capi::guarded_void(call, [&] {
    auto& t = teams_of(call);
    t.table().destroy(call, team);
    t.publish_device();
  });
}

int shoalx_team_device_handle(shoal_team_t team, void* out, size_t num_bytes) {
  const char* call = "shoalx_team_device_handle";
  bool ok = capi::guarded(
      call,
      [&] {
        SHOAL_CHECK_ARG(out != nullptr, call, "out is null");
        SHOAL_CHECK_ARG(num_bytes == sizeof(shoal::device_team), call,
                        "num_bytes={} is not sizeof(shoal::device_team)={}", num_bytes, sizeof(shoal::device_team));
        shoal::device_team d = teams_of(call).table().device_handle(call, team);
        std::memcpy(out, &d, sizeof d);
        return true;
      },
      false);
  return status_of(ok);
}

}  // extern "C"

#pragma once
// What start-up says of an API's upstreams against its description: where relative URLs go when
// the config does not say, the warnings when the two look unlike, and the log line of where
// execute may call and what is injected there (names, never values). Run on the main thread
// before anything is served.

#include <string>

#include "config/config.h"
#include "openapi/document.h"

namespace codemode::server {

// Settles where relative URLs go when the config does not say (upstreams[0].base_path unset):
// the path of the API description's first `servers` URL ("https://slack.com/api" -> "/api").
void settle_base_path(const openapi::Document& api, config::Api& config);

// Warns when the configured upstreams look unlike the API description's `servers`: none of
// their origins is a server's (a test double or a proxy, or a mistyped origin), or
// upstreams[0].base_path is none of the servers' paths. Only for a config the user wrote.
// `where`: where the API's keys are, "" or "apis.NAME." (path_of).
void warn_unlike_servers(const openapi::Document& api, const config::Api& config,
                         const std::string& where);

// Logs where execute may go and what the gateway injects there (header and parameter names,
// never values), or warns that it can go nowhere. `path`: where the API's keys are, "" or
// "apis.NAME.".
void log_upstreams(const config::Api& config, bool base_path_configured, const std::string& path);

// A line's prefix for the API whose keys are at `path` ("" or "apis.NAME." from path_of): "" or
// "apis.NAME: ", for a line that names no key.
std::string label_of(const std::string& path);

}  // namespace codemode::server

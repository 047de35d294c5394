// An error the HTTP API answers with: its status and OpenAI's error fields
// ({"error": {"message", "type", "param", "code"}}). Thrown by request parsing and the
// handlers; http_server.cpp turns it into the response.
#pragma once

#include <string>

#include "engine/base/error.h"

namespace baton::api {

class ApiError : public Error {
 public:
  ApiError(int status, std::string type, std::string message, std::string param = {})
      : Error(message), status_(status), type_(std::move(type)), param_(std::move(param)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }    // "invalid_request_error", ...
  const std::string& param() const { return param_; }  // the offending field, or ""

 private:
  int status_;
  std::string type_;
  std::string param_;
};

// 400 invalid_request_error naming `param`.
inline ApiError bad_request(const std::string& param, const std::string& message) {
  return ApiError(400, "invalid_request_error", message, param);
}

}  // namespace baton::api

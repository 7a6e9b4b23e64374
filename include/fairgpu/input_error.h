// The one error type for bad user input (files, flags' values), caught once by
// the CLI: one line on stderr, exit status 2, nothing written.
#pragma once

#include <stdexcept>
#include <string>

namespace fairgpu {

// Bad input, caught once by the CLI (one line on stderr, exit status 2).
// what() is "<source>: <field>: <problem>" ("<source>: <problem>" when no
// field applies), with control characters escaped so it is always one line.
// `field` is a path into the document such as `tenants[1].job_types[0].speedup[2]`.
class InputError : public std::runtime_error {
 public:
  InputError(std::string source, std::string field, std::string problem);
  const std::string& source() const { return source_; }
  const std::string& field() const { return field_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string source_, field_, problem_;
};

}  // namespace fairgpu

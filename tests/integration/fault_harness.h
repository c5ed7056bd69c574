// The tests' faults (tests/faults/fault_injection.h) in the integration tests: a job or service
// whose environment names FRAMEMILL_TEST_FAULT runs framemill-worker-faults, the tests' build of
// the worker; the product's framemill-worker has no faults.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace framemill::test {

// The path of framemill-worker-faults.
std::string FaultWorkerBinary();

// `config` (null: an empty one) with its worker_binary set to FaultWorkerBinary().
nlohmann::json WithFaultWorker(nlohmann::json config = nullptr);

// Did the fault given once=`path` fire? Each worker creates `path` empty before its sandbox goes
// on; the one that fires writes to it.
bool FaultFired(const std::string& path);

}  // namespace framemill::test

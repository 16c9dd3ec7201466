# Installs the built shardloader into WORK_DIR/prefix, then configures, builds
# and runs the consumer project in cmake/consumer against that prefix.
# Usage: cmake -DSOURCE_DIR=... -DBINARY_DIR=... -DWORK_DIR=... -P test_consumer.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "step failed (${result}): ${ARGN}")
  endif()
endfunction()

run_step(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix})
# Only the public API is installed: no engine, internal or backend headers.
file(GLOB_RECURSE installed RELATIVE ${prefix}/include/shardloader
     ${prefix}/include/shardloader/*)
foreach(header ${installed})
  if(header MATCHES "^(engine|internal|io/(local|remote|cache|output|open))/")
    message(FATAL_ERROR "a private header was installed: ${header}")
  endif()
endforeach()
# The consumer must not need a package that no installed header uses
# (nlohmann_json is private to the library).
run_step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/cmake/consumer -B ${WORK_DIR}/build
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
         -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON)
run_step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_step(${WORK_DIR}/build/consumer)

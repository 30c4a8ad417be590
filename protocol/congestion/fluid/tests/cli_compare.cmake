# simnic-dcqcn-fluid end to end (ctest dcqcn_fluid_cli_compare): writes the
# fluid model's and four packet runs' CSV of a 2:1 incast, then compares
# the mean of the flows of the four runs with the model, 1 ms windows.
file(MAKE_DIRECTORY ${DIR})
execute_process(COMMAND ${TOOL} fluid --duration-ms 20 --sample-us 100 --out ${DIR}/fluid.csv
  RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "fluid: ${rc}")
endif()
set(runs)
foreach(seed 1 2 3 4)
  execute_process(COMMAND ${TOOL} packet --duration-ms 20 --sample-us 100 --seed ${seed}
    --out ${DIR}/packet${seed}.csv RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "packet ${seed}: ${rc}")
  endif()
  list(APPEND runs ${DIR}/packet${seed}.csv)
endforeach()
execute_process(COMMAND ${TOOL} compare ${DIR}/fluid.csv ${runs} --mean-of-flows 1 --window-us 1000
  --fair-gbps 50 OUTPUT_VARIABLE out RESULT_VARIABLE rc)
message("${out}")
if(rc)
  message(FATAL_ERROR "compare: exit ${rc}")
endif()

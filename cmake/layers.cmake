# The layers of lib/ as libraries (README "Structure"): moe_layer(NAME [DEPENDS layer...] [LIBS target...])
# makes the static library moe_NAME of lib/NAME/**/*.cpp, linked to the layers it DEPENDS on (and, through
# them, to everything below) and to third-party LIBS. Each layer's headers are reachable only through
# its include view, ${CMAKE_BINARY_DIR}/layers/NAME/NAME -> lib/NAME (lib/ itself is on no include
# path), so a source sees the headers of its own layer and of the layers it links and nothing else:
# an include of a higher layer, or of one not declared, fails to compile. Covered by every build and by
# tests/scripts/layering.sh (an upward include must fail the build).
function(moe_layer_view name out_var)
  set(view ${CMAKE_BINARY_DIR}/layers/${name})
  if(NOT EXISTS ${view}/${name})
    file(MAKE_DIRECTORY ${view})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/lib/${name} ${view}/${name} SYMBOLIC)
  endif()
  set(${out_var} ${view} PARENT_SCOPE)
endfunction()

function(moe_layer name)
  cmake_parse_arguments(L "" "" "DEPENDS;LIBS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lib/${name}/*.cpp)
  add_library(moe_${name} STATIC ${sources})
  moe_layer_view(${name} view)
  target_include_directories(moe_${name} PUBLIC ${view})
  foreach(dep ${L_DEPENDS})
    target_link_libraries(moe_${name} PUBLIC moe_${dep})
  endforeach()
  target_link_libraries(moe_${name} PUBLIC ${L_LIBS})
  target_compile_options(moe_${name} PRIVATE -Wall -Wextra)
  set_property(GLOBAL APPEND PROPERTY MOE_LAYERS ${name})
  set_property(GLOBAL PROPERTY MOE_LAYER_DEPENDS_${name} ${L_DEPENDS})
endfunction()

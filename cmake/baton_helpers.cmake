# Every directory below tools/, bench/ and examples/ is one executable named after it, built
# from the .cpp files it holds and linked against the whole engine (baton_all), or against the
# engine libraries listed in baton_links_<name> when the caller sets that variable first.
function(baton_executables_in dir)
  file(GLOB children LIST_DIRECTORIES true RELATIVE "${dir}" "${dir}/*")
  foreach(child IN LISTS children)
    if(IS_DIRECTORY "${dir}/${child}")
      file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${dir}/${child}/*.cpp")
      # bench/llamacpp's npm packages ship C++ sources of their own (node-llama-cpp's addon).
      list(FILTER sources EXCLUDE REGEX "/node_modules/")
      if(sources)
        add_executable(${child} ${sources})
        if(DEFINED baton_links_${child})
          target_link_libraries(${child} PRIVATE ${baton_links_${child}})
        else()
          target_link_libraries(${child} PRIVATE baton_all)
        endif()
        set_target_properties(${child} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin")
      endif()
    endif()
  endforeach()
endfunction()

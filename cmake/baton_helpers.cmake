# Every directory below tools/, bench/ and examples/ is one executable named after it, built
# from the .cpp files it holds and linked against the whole engine.
function(baton_executables_in dir)
  file(GLOB children LIST_DIRECTORIES true RELATIVE "${dir}" "${dir}/*")
  foreach(child IN LISTS children)
    if(IS_DIRECTORY "${dir}/${child}")
      file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${dir}/${child}/*.cpp")
      if(sources)
        add_executable(${child} ${sources})
        target_link_libraries(${child} PRIVATE baton_all)
      endif()
    endif()
  endforeach()
endfunction()

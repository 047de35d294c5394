# The web UI's files (engine/api/webui/*.html|css|js) become byte arrays in a generated source of
# baton_api (cmake/embed_assets.cmake), regenerated when any of them changes.
file(GLOB baton_webui_files CONFIGURE_DEPENDS "${CMAKE_CURRENT_LIST_DIR}/*.html" "${CMAKE_CURRENT_LIST_DIR}/*.css"
     "${CMAKE_CURRENT_LIST_DIR}/*.js")
list(SORT baton_webui_files)
string(REPLACE ";" "|" baton_webui_arg "${baton_webui_files}")
set(baton_webui_cpp "${CMAKE_CURRENT_BINARY_DIR}/webui_assets.cpp")
add_custom_command(
  OUTPUT "${baton_webui_cpp}"
  COMMAND "${CMAKE_COMMAND}" "-DOUTPUT=${baton_webui_cpp}" "-DDIR=${CMAKE_CURRENT_LIST_DIR}" "-DFILES=${baton_webui_arg}"
          -P "${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake"
  DEPENDS ${baton_webui_files} "${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake"
  COMMENT "Embedding the web UI (${CMAKE_CURRENT_LIST_DIR})"
  VERBATIM)
target_sources(baton_api PRIVATE "${baton_webui_cpp}")
set_source_files_properties("${baton_webui_cpp}" PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

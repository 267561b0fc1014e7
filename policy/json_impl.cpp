// Boost.JSON, compiled once here (header-only mode) so that every build of the project, the
// sanitizer builds included, compiles it with the same flags as the rest of the server.
#include <boost/json/src.hpp>

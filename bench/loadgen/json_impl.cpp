// Boost.JSON's implementation, compiled once for actorserve_loadgen (header-only use elsewhere).
#include <boost/json/src.hpp>

#include "greeting.hpp"

std::string greeting(const std::string& who) { return "Hello, " + who + "!"; }

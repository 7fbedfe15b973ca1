#pragma once
#include <string>

std::string greeting(const std::string& who);

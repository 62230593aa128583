#include "engine/container/one_file.h"

#include <sys/stat.h>

#include "engine/pack/pack_env.h"

namespace tessera {

bool is_regular_file(Env& env, const std::string& path) {
  struct stat st;
  return env.stat(path.c_str(), &st, true) == 0 && S_ISREG(st.st_mode);
}

std::shared_ptr<Context> create_one_file(const std::shared_ptr<Context>& ctx, const std::string& path,
                                         const std::vector<uint8_t>& wrapper, bool exclusive) {
  std::shared_ptr<Context> parent = Context::or_process(ctx);
  return std::make_shared<Context>(parent, PackEnv::create(parent->env_shared(), path, wrapper, exclusive));
}

std::shared_ptr<Context> open_one_file(const std::shared_ptr<Context>& ctx, const std::string& path, bool writable) {
  std::shared_ptr<Context> parent = Context::or_process(ctx);
  return std::make_shared<Context>(parent, PackEnv::open(parent->env_shared(), path, writable));
}

}  // namespace tessera

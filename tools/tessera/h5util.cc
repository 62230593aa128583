// h5util.cc — h5util.h.
#include "tools/tessera/h5util.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tool {

namespace {

std::string order_text(hid_t t) {
  H5T_order_t o = H5Tget_order(t);
  return o == H5T_ORDER_BE ? " (BE)" : "";
}

std::string cset_text(hid_t t) { return H5Tget_cset(t) == H5T_CSET_UTF8 ? "UTF-8" : "ASCII"; }

}  // namespace

std::string type_text(hid_t t) {
  const size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
    case H5T_INTEGER:
      return std::string(H5Tget_sign(t) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(size * 8) + order_text(t);
    case H5T_FLOAT: {
      std::string s = "float" + std::to_string(size * 8);
      size_t spos, epos, esize, mpos, msize;
      if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) >= 0 && size == 2 && esize == 8) s = "bfloat16";
      return s + order_text(t);
    }
    case H5T_STRING: {
      if (H5Tis_variable_str(t) > 0) return "vlen string (" + cset_text(t) + ")";
      return "string[" + std::to_string(size) + "] (" + cset_text(t) + ")";
    }
    case H5T_BITFIELD: return "bitfield" + std::to_string(size * 8) + order_text(t);
    case H5T_OPAQUE: {
      std::string s = "opaque[" + std::to_string(size) + "]";
      if (char* tag = H5Tget_tag(t)) {
        if (*tag) s += " \"" + std::string(tag) + "\"";
        H5free_memory(tag);
      }
      return s;
    }
    case H5T_COMPOUND: {
      std::string s = "compound {";
      const int n = H5Tget_nmembers(t);
      for (int i = 0; i < n; ++i) {
        char* name = H5Tget_member_name(t, static_cast<unsigned>(i));
        hid_t mt = H5Tget_member_type(t, static_cast<unsigned>(i));
        if (i) s += ", ";
        s += std::string(name ? name : "?") + ": " + (mt >= 0 ? type_text(mt) : "?");
        if (name) H5free_memory(name);
        if (mt >= 0) H5Tclose(mt);
      }
      return s + "}";
    }
    case H5T_REFERENCE: {
      if (H5Tequal(t, H5T_STD_REF_OBJ) > 0) return "object reference (old-style)";
      if (H5Tequal(t, H5T_STD_REF_DSETREG) > 0) return "region reference (old-style)";
      return "reference";
    }
    case H5T_ENUM: {
      hid_t base = H5Tget_super(t);
      std::string s = "enum " + (base >= 0 ? type_text(base) : std::string("?")) + " {";
      const int n = H5Tget_nmembers(t);
      for (int i = 0; i < n; ++i) {
        char* name = H5Tget_member_name(t, static_cast<unsigned>(i));
        std::vector<unsigned char> v(size > 8 ? size : 8);
        long long value = 0;
        if (base >= 0 && H5Tget_member_value(t, static_cast<unsigned>(i), v.data()) >= 0 &&
            H5Tconvert(base, H5T_NATIVE_LLONG, 1, v.data(), nullptr, H5P_DEFAULT) >= 0)
          std::memcpy(&value, v.data(), sizeof value);
        if (i) s += ", ";
        s += std::string(name ? name : "?") + "=" + std::to_string(value);
        if (name) H5free_memory(name);
      }
      if (base >= 0) H5Tclose(base);
      return s + "}";
    }
    case H5T_VLEN: {
      hid_t base = H5Tget_super(t);
      std::string s = "vlen sequence of " + (base >= 0 ? type_text(base) : std::string("?"));
      if (base >= 0) H5Tclose(base);
      return s;
    }
    case H5T_ARRAY: {
      const int r = H5Tget_array_ndims(t);
      std::vector<hsize_t> d(r > 0 ? r : 0);
      if (r > 0) H5Tget_array_dims2(t, d.data());
      std::string s = "array[";
      for (int i = 0; i < r; ++i) s += (i ? "x" : "") + std::to_string(d[i]);
      hid_t base = H5Tget_super(t);
      s += "] of " + (base >= 0 ? type_text(base) : std::string("?"));
      if (base >= 0) H5Tclose(base);
      return s;
    }
    case H5T_TIME: return "time";
    default: return "unknown type";
  }
}

std::vector<std::string> filter_texts(hid_t dcpl) {
  std::vector<std::string> out;
  const int n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    size_t nelmts = 8;
    unsigned cd[8] = {0};
    char name[256] = "";
    H5Z_filter_t f = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nelmts, cd, sizeof name, name, &config);
    switch (f) {
      case H5Z_FILTER_DEFLATE: out.push_back("deflate(" + std::to_string(nelmts ? cd[0] : 0) + ")"); break;
      case H5Z_FILTER_SHUFFLE: out.push_back("shuffle"); break;
      case H5Z_FILTER_FLETCHER32: out.push_back("fletcher32"); break;
      case H5Z_FILTER_SZIP: out.push_back("szip"); break;
      case H5Z_FILTER_NBIT: out.push_back("nbit"); break;
      case H5Z_FILTER_SCALEOFFSET: out.push_back("scaleoffset"); break;
      default: out.push_back(std::string(*name ? name : "filter") + "(id " + std::to_string(f) + ")"); break;
    }
  }
  return out;
}

}  // namespace tool

#include <H5VLconnector.h>
#include <unistd.h>

#include "engine/util/file_io.h"
#include "tools/tessera/command.h"

namespace tool {

Hid tessera_fapl(const std::string& settings) {
  static hid_t vol = [] {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      const std::string plugins = tessera::join_path(tessera::parent_dir(tessera::parent_dir(exe)), "plugins");
      if (tessera::path_exists(tessera::Env::posix(), tessera::join_path(plugins, "libtessera.so"))) H5PLprepend(plugins.c_str());
    }
    hid_t id;
    H5E_BEGIN_TRY { id = H5VLregister_connector_by_name("tessera", H5P_DEFAULT); }
    H5E_END_TRY
    return id;
  }();
  if (vol < 0)
    fail("the tessera HDF5 connector could not be loaded (no libtessera.so in <build>/plugins beside this "
         "program, nor in HDF5_PLUGIN_PATH)");
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS));
  void* info = nullptr;
  if (!settings.empty() && H5VLconnector_str_to_info(settings.c_str(), vol, &info) < 0)
    fail("tessera settings '" + settings + "': " + h5_error_message());
  herr_t rc = fapl.valid() ? H5Pset_vol(fapl, vol, info) : -1;
  if (info) H5VLfree_connector_info(vol, info);
  if (rc < 0) fail("cannot select the tessera connector: " + h5_error_message());
  return fapl;
}

Hid native_fapl() {
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.valid() || H5Pset_vol(fapl, H5VL_NATIVE, nullptr) < 0) fail("cannot select HDF5's native connector");
  return fapl;
}

}  // namespace tool

// What hwport_probe (probe_main.cpp) tells the host (plugin_probe.cpp). The probe writes one
// line per stage on kProbeReportFd *before* it starts that stage, then "done" and exits with
// kProbeOkExit. Only both together count as success: a plugin may end the probe itself
// (exit() in a constructor or in init), and then the last stage line says where.
#pragma once

#include <cstddef>

namespace hwport {

inline constexpr int kProbeReportFd = 3;
inline constexpr int kProbeOkExit = 86;  // not 0: exit(0) in a plugin must not look like success
inline constexpr char kProbeDone[] = "done";

// The longest strings the host copies out of a plugin (the probe reads as far, so what it
// checked is what the host will read).
inline constexpr size_t kMaxDeviceTypeLength = 64;
inline constexpr size_t kMaxPluginVersionLength = 256;
inline constexpr size_t kMaxPluginMessageLength = 4096;
// Devices whose get_properties the probe calls (the host calls it for each device at load).
inline constexpr int kProbePropertiesDevices = 64;

struct ProbeStage {
  const char* name;      // what the probe writes
  const char* activity;  // how a reason says where the probe ended
};

// In the order the probe runs them.
inline constexpr ProbeStage kProbeStages[] = {
    {"load", "while loading the library (in a constructor run by dlopen)"},
    {"init", "during hwport_plugin_init"},
    {"api", "while reading the HWP_PluginApi that hwport_plugin_init returned"},
    {"device_type", "while reading the HWP_PluginApi.device_type string"},
    {"plugin_version", "while reading the HWP_PluginApi.plugin_version string"},
    {"tables", "while reading the HWP_DeviceTable/HWP_MemoryTable/HWP_StreamTable of the "
               "HWP_PluginApi"},
    {"get_last_error", "while calling get_last_error or reading the string it returned"},
    {"get_device_count", "during get_device_count"},
    {"get_properties", "during HWP_DeviceTable.get_properties"},
};

}  // namespace hwport

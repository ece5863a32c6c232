-- -*- lua -*-
-- Lmod modulefile for flare-slurm (docs/install.md). Unpack a release
-- tarball under ROOT/VERSION and name this file VERSION.lua, e.g.
--   mkdir -p /opt/flare-slurm/0.1.0
--   tar -xzf flare-slurm-linux-amd64.tar.gz -C /opt/flare-slurm/0.1.0 --strip-components=1
--   cp 0.1.0.lua /opt/modulefiles/flare-slurm/0.1.0.lua
-- The version comes from the file name; only ROOT is site specific.

local root    = "/opt/flare-slurm"
local version = myModuleVersion()
local prefix  = pathJoin(root, version)

whatis("Name: flare-slurm")
whatis("Version: " .. version)
whatis("Description: run NVFlare job processes as Slurm batch jobs")

help([[
flare-slurm ]] .. version .. [[ validates NVFlare Slurm configs, prepares runtime
workspaces, and compiles and runs NVFlare jobs as Slurm batch jobs.
  flare-slurm --help, man flare-slurm, flare-slurm version
Shell completion (bash): source <(flare-slurm completion bash)
]])

conflict("flare-slurm")

prepend_path("PATH", pathJoin(prefix, "bin"))
-- Where no shell start-up file sets MANPATH, man(1) searches only what
-- modules add to it: keep the system pages with a MANPATH ending in ':'
-- (manpath(5)), as most Lmod sites already do.
prepend_path("MANPATH", pathJoin(prefix, "share/man"))

"""Build ``src/ascend_compat/doctor/data/cann_errors.json``, the table behind ``ascend-compat error`` / ``explain``.

    python tools/build_cann_errors.py [REFERENCE_JSON]

``REFERENCE_JSON`` (default ``../shared/reference/cann_error_codes.json`` beside the checkout) merges public Huawei
sources; each section names its origin and every generated entry keeps it in ``source``:

- ``acl_numeric``: ACL return codes (hicann/runtime ``docs/zh/api_ref/25-01_aclError.md`` and
  ``include/external/acl/error_codes/rt_error_codes.h``; English descriptions from Ascend/pytorch
  ``torch_npu/csrc/core/npu/NPUErrorCodes.h``).
- ``cann_E_codes``: CANN error-message codes (hicann/runtime ``src/dfx/error_manager/error_code.json``).
- ``aclnn_status``: aclnn API statuses (hicann/ops-nn ``docs/zh/context/aclnn_return_code.md``).
- ``hccl_result``: ``HcclResult`` values (Ascend/pytorch ``third_party/hccl/inc/hccl/hccl_types.h``).
- ``torch_npu_ERR``: torch_npu's ``ERR<module><type>`` scheme (``torch_npu/utils/_error_code.py``).
- ``torch_npu_special``: codes torch_npu itself reacts to (``NPUException.{h,cpp}``).

Wording. Facts (code, name, family, component, Chinese meaning, message template) come from the reference; the
English ``meaning`` / ``cause`` / ``fix`` texts are ascend-compat's own. About 50 codes users hit most have
hand-written text (``CURATED``); the rest is generated from the structured fields: the header comment or the
code's name (numeric codes), the title and class (E-codes), the module and type (ERR codes), completed by rules
on the name/title (timeouts, memory, files, parameters ...) that say where to look. Reference prose (the English
descriptions and E-code suggestions) is used to check the facts but never copied. ``xx9999`` E-codes missing from
``error_code.json`` are added for every module prefix, since the reference documents that suffix as the module's
inner error.

Output is deterministic (sorted codes, fixed key order, one entry per line): the regeneration test compares bytes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Optional

import jsonlines  # tools/jsonlines.py: this folder is first on sys.path when a tool runs

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "ascend_compat" / "doctor" / "data" / "cann_errors.json"
# The shared reference data beside the checkout: ../shared/reference relative to the repository.
DEFAULT_REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "cann_error_codes.json"

SRC_ACL_DOC = "hicann/runtime docs/zh/api_ref/25-01_aclError.md"
SRC_RT_HDR = "hicann/runtime include/external/acl/error_codes/rt_error_codes.h"
SRC_ECODES = "hicann/runtime src/dfx/error_manager/error_code.json"
SRC_MACROS = "hicann/runtime docs/zh/guidelines/error_message_guide/macro-selection-guide.md"
SRC_ACLNN = "hicann/ops-nn docs/zh/context/aclnn_return_code.md"
SRC_HCCL = "Ascend/pytorch third_party/hccl/inc/hccl/hccl_types.h"
SRC_ERR = "Ascend/pytorch torch_npu/utils/_error_code.py"
SRC_SPECIAL = "Ascend/pytorch torch_npu/csrc/core/npu/NPUException.{h,cpp}"

FAMILIES: dict[str, str] = {
    "success": "Success: not an error.",
    "acl_parameter": "ACL return code 1xxxxx: a parameter or environment problem the caller can fix.",
    "acl_resource": "ACL return code 2xxxxx: a resource problem (memory, streams, device, unsupported feature).",
    "acl_business": "ACL return code 3xxxxx: a business-level limit or state.",
    "acl_internal": "ACL return code 5xxxxx: an internal error in CANN, the driver or the device; the details "
                    "are in the CANN error message (E-code) printed with it.",
    "aclnn": "aclnn operator API status: 161xxx parameter check, 361xxx runtime call, 561xxx inner/kernel "
             "package problem.",
    "hccl": "HCCL result (HcclResult 0-24) returned by a collective-communication call.",
    "cann_message": "CANN error-message code E<module><4 digits> (W...: a warning), printed with a text that "
                    "names the failing argument or resource.",
    "torch_npu": "torch_npu error code ERR<module 2 digits><type 3 digits>: torch_npu's own classification of "
                 "the failure, printed after the lower-level code.",
}

# Where to look when a code only names the failing layer: used by many generated fixes.
LOG_HINT = ("Read the CANN message printed with it (a line starting with an E-code such as EZ1001, EE1001, "
            "EL0004) or the plog under $ASCEND_PROCESS_LOG_PATH (default ~/ascend/log) for the first error.")
NO_CAUSE = "The code names the problem; its cause is in the messages printed with it."
ASYNC_HINT = ("NPU kernels run asynchronously, so the Python line in the traceback may not be the op that "
              "failed: rerun with ASCEND_LAUNCH_BLOCKING=1 to fail at the real op.")

# Hand-written text for the codes users hit most: code -> (meaning, cause, fix). Meanings follow the reference.
CURATED: dict[str, tuple[str, str, str]] = {
    "100000": ("Parameter check failed: an argument passed to an ACL API is invalid.",
               "A wrong value, dtype, shape or handle reached the ACL API named in the 'NPU function error' line.",
               "Look at the API and arguments in the error line; check the tensors' dtype/shape/device. " + LOG_HINT),
    "100001": ("ACL is not initialised: an ACL API was called before aclInit (or before the feature's own "
               "init API, e.g. profiling or dump).",
               "Device work was started before torch_npu initialised the device, e.g. in a forked child process "
               "or after torch.npu was shut down.",
               "Call torch.npu.set_device(...) (or create an NPU tensor) first in every process; use the 'spawn' "
               "start method for multiprocessing with NPUs."),
    "107001": ("Invalid device ID.",
               "The requested NPU index does not exist or is hidden by ASCEND_RT_VISIBLE_DEVICES (the equivalent "
               "of CUDA_VISIBLE_DEVICES), e.g. npu:4 on a 4-card visible set or LOCAL_RANK larger than the "
               "visible devices.",
               "Check `npu-smi info` and ASCEND_RT_VISIBLE_DEVICES; index devices from 0 within the visible set "
               "and derive the device from LOCAL_RANK."),
    "107002": ("No current context: an ACL runtime call was made in a thread that has no device set.",
               "A new thread or process used the NPU without setting the device first (torch_npu sets it per "
               "thread).",
               "Call torch.npu.set_device(rank) at the start of every thread/process that touches the NPU."),
    "107003": ("The stream does not belong to the current context.",
               "A stream created for one device was used while another device was current.",
               "Use streams only with the device they were created on; switch with torch.npu.device(...)."),
    "107022": ("The device is aborting its tasks (torch_npu prints FORCE STOP).",
               "Tasks were aborted on purpose, typically by torch_npu's fault handling after an error elsewhere "
               "or a stop request.",
               "Look for the first error before this one (another rank or an earlier op); this code is a "
               "consequence."),
    "148049": ("ASCEND_OPP_PATH is not set or does not point to the operator package.",
               "The CANN environment script was not sourced, or the opp package is missing.",
               "Source the CANN set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) and check that "
               "$ASCEND_OPP_PATH exists."),
    "200000": ("Memory allocation failed.",
               "Not enough memory was available on the device or host for the request.",
               "Reduce batch size or model size, free cached memory (torch.npu.empty_cache()), or check "
               "`npu-smi info` for other processes holding NPU memory."),
    "207000": ("The feature is not supported by the runtime on this device.",
               "The call needs a feature the chip, driver or CANN version lacks. torch_npu warns that the "
               "driver and firmware packages may not match when this code comes with an empty device message.",
               "Check that the driver, firmware and CANN versions are a supported set (`npu-smi info`, "
               "`ascend-compat doctor`); upgrade the one that is behind. " + LOG_HINT),
    "207001": ("Device memory allocation failed (out of memory).",
               "The NPU has no free block large enough for the request.",
               "Reduce batch size / sequence length, enable activation checkpointing, or set "
               "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True to reduce fragmentation."),
    "207018": ("The device memory is exhausted (device OOM).",
               "The job needs more NPU memory than is free, or memory is fragmented or held by another process.",
               "Reduce batch size / sequence length, use activation checkpointing or mixed precision, call "
               "torch.npu.empty_cache() between phases, and check `npu-smi info` for other processes."),
    "507011": ("Model execution failed on the device.",
               "A task inside a model (graph) failed; the specific failure is reported with it.",
               LOG_HINT),
    "507014": ("An AI Core task timed out.",
               "A kernel on the AI Core ran longer than allowed: a hang, a very large op or a deadlock.",
               "Find the op with ASCEND_LAUNCH_BLOCKING=1; if it is a collective, check the other ranks. "
               + LOG_HINT),
    "507015": ("An AI Core kernel raised an exception during execution.",
               "An operator kernel failed on the AI Core: often an out-of-range index or address, bad input "
               "data (NaN/Inf in some ops), or an op bug for this shape/dtype.",
               ASYNC_HINT + " Check the inputs of that op (index ranges, shapes). " + LOG_HINT),
    "507033": ("Failed to start (set up) the device.",
               "The device could not be opened: it is in use or faulty, the driver is not loaded, or the "
               "process has no permission on /dev/davinci*.",
               "Check `npu-smi info` (device health, other processes), the driver installation, and the "
               "container's device mounts. " + LOG_HINT),
    "507034": ("A Vector Core task timed out.",
               "A kernel on the Vector Core ran longer than allowed: a hang or a deadlock.",
               "Find the op with ASCEND_LAUNCH_BLOCKING=1. " + LOG_HINT),
    "507035": ("A Vector Core kernel raised an exception during execution.",
               "An operator kernel failed on the Vector Core: often an out-of-range index (e.g. embedding or "
               "gather with an index >= size), bad input data, or an op bug for this shape/dtype.",
               ASYNC_HINT + " Check index ranges and shapes of that op's inputs. " + LOG_HINT),
    "507046": ("Stream synchronisation timed out: the stream's tasks did not finish in time.",
               "A task on the stream hangs, often a collective waiting for another rank.",
               "Check other ranks for an earlier error. " + LOG_HINT),
    "507053": ("Device memory error (torch_npu prints UCE ERROR: an uncorrectable memory error).",
               "A hardware memory fault on the NPU.",
               "Not a code bug: report the device to the cluster admin, check `npu-smi info` health and move the "
               "job to healthy devices; resume from the last checkpoint."),
    "507054": ("HBM multi-bit ECC error (torch_npu prints HBM MULTI BIT ECC ERROR).",
               "Uncorrectable ECC error in the NPU's HBM: a hardware fault.",
               "Not a code bug: take the device out of service and resume from a checkpoint on healthy "
               "devices."),
    "507055": ("Suspected device memory error (torch_npu prints SUSPECT MEM ERROR).",
               "The runtime suspects a hardware memory fault.",
               "Check device health with `npu-smi info`; rerun on other devices to confirm."),
    "507056": ("Link error (torch_npu prints HCCS LINK ERROR / UB LINK ERROR).",
               "The chip-to-chip link failed during communication.",
               "Check link and device health with the cluster tools (npu-smi, hccn_tool); move to healthy "
               "nodes and resume from a checkpoint."),
    "507057": ("Suspected error on a remote device (torch_npu prints SUSPECT REMOTE ERROR).",
               "The fault seems to come from a peer device or node in the communication.",
               "Look at the logs of the other ranks for their first error."),
    "507899": ("Internal error in the driver.",
               "The NPU driver failed under the runtime: device fault, driver/firmware/CANN mismatch, or a "
               "device left in a bad state by a previous job.",
               "Check `npu-smi info` for device health, make sure driver, firmware and CANN versions match, "
               "and look for the E-code (often EL...) printed with it. " + LOG_HINT),
    "507904": ("Retrying a failed HCCL operation failed (torch_npu prints HCCL OP RETRY FAILED).",
               "A collective failed and HCCL's automatic retry did not recover it.",
               "Check network links and the other ranks' logs for the first error."),
    "500000": ("Unknown internal error.",
               "Something failed inside CANN without a more specific code.",
               LOG_HINT),
    "500002": ("Internal error in the Graph Engine (GE).", "A GE step failed.", LOG_HINT),
    "161001": ("aclnn parameter check failed: an argument is a null pointer.",
               "An input/output tensor or argument that the operator needs was missing (None), or a tensor "
               "could not be converted for the op.",
               "Check that every required input of the op in the error line is a real NPU tensor. " + LOG_HINT),
    "161002": ("aclnn parameter check failed: an argument is invalid, e.g. the dtypes of two inputs cannot be "
               "combined.",
               "The op does not accept this dtype, shape, format or combination of inputs on this chip.",
               "Read the EZ1001 message printed with it: it names the tensor and the allowed dtypes/shapes. "
               "Cast inputs (e.g. .float() / .half()) or reshape them accordingly."),
    "361001": ("An aclnn API failed when calling the NPU runtime.",
               "A runtime call inside the operator failed: memory, stream or device problem.",
               LOG_HINT),
    "561000": ("aclnn inner error: the operator API failed internally.",
               "Often a missing kernel binary for this op/shape, or a CANN/ops package mismatch.",
               "Check that the CANN toolkit and the ops (kernels) package are installed and of the same "
               "version. " + LOG_HINT),
    "561002": ("aclnn inner error: tiling the NPU kernel failed.",
               "The kernel could not split the work for this input shape or attribute combination.",
               "Try other shapes (e.g. padded/contiguous inputs) or a newer CANN. " + LOG_HINT),
    "561003": ("aclnn inner error: no NPU kernel was found for the op (the operator binary package may not "
               "be installed).",
               "The kernel package for this chip is missing, or does not match the CANN toolkit version.",
               "Install the CANN ops (kernels) package matching your toolkit version and chip, and source "
               "set_env.sh. " + LOG_HINT),
    "561103": ("aclnn inner error: a null pointer occurred inside the operator API.",
               "Usually an environment problem (missing or mismatched kernel package, ASCEND_OPP_PATH), "
               "sometimes an unsupported input the op does not reject cleanly.",
               "Check the CANN toolkit and ops package versions and the environment (set_env.sh); read the "
               "EZ9999 lines printed with it: they name the op and the step that failed."),
    "561107": ("aclnn inner error: ASCEND_OPP_PATH is not set.",
               "The CANN environment script was not sourced.",
               "Source the CANN set_env.sh before starting Python."),
    "561112": ("aclnn inner error: the op's binary kernel library was not loaded.",
               "The ops (kernels) package is missing or does not match the toolkit.",
               "Install the ops package matching the CANN toolkit and chip; source set_env.sh."),
    "EZ9999": ("aclnn/operator inner error: the text after 'EZ9999' says what failed.",
               "An operator failed inside CANN: a missing kernel binary, an unsupported input, or a "
               "CANN package problem.",
               "Read the EZ9999 lines and their TraceBack (they name the op); check the CANN package and "
               "environment variables; try ASCEND_LAUNCH_BLOCKING=1 to locate the op."),
    "EZ1001": ("aclnn parameter error: the text after 'EZ1001' names the invalid argument.",
               "An operator rejected a dtype, shape or value of one of its inputs.",
               "Change the named input as the message asks (dtype in the support list, shape rule); cast or "
               "reshape in your code."),
    "EE9999": ("Runtime inner error: the runtime module failed internally; the lines after 'EE9999' give the "
               "details.",
               "Often a consequence of an earlier kernel failure, a device fault or a version mismatch.",
               LOG_HINT),
    "EI9999": ("HCCL inner error: collective communication failed internally; the lines after it give the "
               "details.",
               "A communication step failed: often a peer rank died or the network is unstable.",
               "Check all ranks' logs for the first error and the network/device health."),
    "EH9999": ("ACL inner error; the lines after it give the details.",
               "An ACL call failed internally, often after a lower-level (runtime/driver) failure.",
               LOG_HINT),
    "EL9999": ("Driver inner error; the lines after it give the details.",
               "The NPU driver failed: device fault or driver/firmware mismatch.",
               "Check `npu-smi info` and the driver/firmware versions. " + LOG_HINT),
    "EE1001": ("Runtime: an argument is invalid; the message gives the reason.",
               "A runtime API got a value outside its range, or APIs were called in the wrong order.",
               "Read the reason in the message; check device index, stream and sizes used in the failing call."),
    "EI0002": ("HCCL timeout: a rank waited for a notification from a remote rank that never came.",
               "Another rank failed or is much slower (e.g. still compiling, loading data, or training on more "
               "samples), or the link lost packets. The default execution timeout is 1800 s (HCCL_EXEC_TIMEOUT).",
               "Find the rank that failed first (its own error is the root cause); make every rank run the same "
               "number of steps/collectives; raise HCCL_EXEC_TIMEOUT only if a rank is legitimately slow."),
    "EI0004": ("HCCL: the rank table or the rank is invalid.",
               "The cluster configuration (rank table file, world size, rank ids) does not match the job.",
               "Check RANK/WORLD_SIZE/MASTER_ADDR and the rank table file the job uses."),
    "EI0005": ("HCCL: the arguments of a collective differ between ranks.",
               "Ranks called the same collective with different parameters (count, dtype, op) or in a different "
               "order.",
               "Make all ranks issue the same collectives in the same order with the same shapes and dtypes."),
    "EI0006": ("HCCL: getting a socket timed out while ranks connected.",
               "Some ranks did not reach communicator setup in time (crashed, slow start) or the nodes cannot "
               "reach each other. The connect timeout defaults to 120 s (HCCL_CONNECT_TIMEOUT).",
               "Check which ranks failed or started late; raise HCCL_CONNECT_TIMEOUT if start-up is slow; check "
               "network connectivity between nodes (e.g. hccn_tool)."),
    "EJ0001": ("HCCP process initialisation failed; the previous training process may still be running.",
               "A previous job still holds the device's communication process.",
               "Make sure the previous job has exited (`npu-smi info`), wait a few seconds and retry."),
    "EL0004": ("Driver: memory allocation failed (out of memory). torch_npu turns this into "
               "torch.OutOfMemoryError.",
               "The device does not have enough free memory for the request.",
               "Reduce batch size / sequence length, use activation checkpointing or mixed precision, free "
               "cached memory (torch.npu.empty_cache()) and check `npu-smi info` for other processes."),
    "EL0001": ("Driver: the device was not found or is abnormal.",
               "The device is absent, faulty or not visible to this process/container.",
               "Check `npu-smi info`, ASCEND_RT_VISIBLE_DEVICES and the container's device mounts."),
    "EL0005": ("Driver: the resources are busy.",
               "Another process is using the device or resource.",
               "Stop other jobs on the device (`npu-smi info` lists them) or wait and retry."),
}

# ERR codes: torch_npu's classification, printed after the real code. (module, type) -> (meaning, cause, fix).
ERR_CURATED: dict[str, tuple[str, str, str]] = {
    "ERR00100": ("torch_npu (PTA) failed calling an ACL API. This is a wrapper: the real error is the ACL code "
                 "in the 'NPU function error: ..., error code is N' line and the CANN E-code messages around it.",
                 "The ACL/aclnn call named in the 'NPU function error' line returned an error.",
                 "Look up that number (ascend-compat error N) and the E-codes next to it; "
                 "`ascend-compat explain LOG` does both."),
    "ERR01002": ("torch_npu operator layer (OPS): invalid type, e.g. a dtype the NPU op does not support.",
                 "An op was called with a dtype (or argument type) the NPU implementation rejects.",
                 "Cast the input to a supported dtype (float16/bfloat16/float32 are the safe choices) or move "
                 "that op to CPU."),
    "ERR02005": ("torch_npu distributed layer (DIST): internal error.",
                 "A failure inside torch_npu's HCCL process group, often after a collective or watchdog error.",
                 "Look for the HCCL error (HCCL function error ..., EI codes) before it and the other ranks' first "
                 "errors."),
    "ERR02200": ("torch_npu distributed layer (DIST) failed calling an HCCL API. This is a wrapper: the real error "
                 "is the HCCL result in the 'HCCL function error: ..., error code is N' line and the EI/EJ "
                 "messages around it.",
                 "The HCCL call named in the 'HCCL function error' line returned an error.",
                 "Look up that HCCL result and the EI/EJ codes (`ascend-compat explain LOG`)."),
}

# aclnn statuses: the reference only has Chinese; these are our translations of its meanings.
ACLNN_MEANINGS: dict[str, str] = {
    "0": "Success.",
    "561001": "aclnn inner error: inferring the output shape failed.",
    "561101": "aclnn inner error: creating the aclOpExecutor failed.",
    "561102": "aclnn inner error: the executor was not handed over (uniqueExecutor ReleaseTo not called).",
    "561104": "aclnn inner error: the operator has an unexpected number of attributes.",
    "561105": "aclnn inner error: hash key conflict while matching a kernel.",
    "561106": "aclnn inner error: invalid implementation-mode argument.",
    "561108": "aclnn inner error: loading the operator-info JSON failed.",
    "561109": "aclnn inner error: a field of the JSON could not be loaded.",
    "561110": "aclnn inner error: invalid format value in the JSON.",
    "561111": "aclnn inner error: invalid dtype value in the JSON.",
    "561113": "aclnn inner error: a field of the operator JSON file is invalid.",
    "561114": "aclnn inner error: more attributes than the JSON specifies.",
    "561115": "aclnn inner error: fewer attributes than the JSON specifies.",
    "561116": "aclnn inner error: the JSON declares more than 32 inputs.",
    "561117": "aclnn inner error: the operator-info JSON description is missing.",
    "561118": "aclnn inner error: parsing the workspace info of the static binary JSON failed.",
    "561119": "aclnn inner error: parsing the core-count (block dim) info of the static binary JSON failed.",
}

# ACL codes whose name alone does not say enough: our translation of the reference's Chinese meaning.
ACL_MEANINGS: dict[str, str] = {
    "100002": "Repeated initialisation or repeated loading.",
    "100004": "Writing a file failed.",
    "100006": "Parsing a file failed.",
    "100007": "The file lacks parameters it must contain.",
    "100012": "Deserialising the model failed.",
    "100013": "Parsing the model failed.",
    "100014": "Reading the model failed.",
    "100016": "The model lacks parameters it must contain.",
    "100019": "The model is not a dynamic (multi-shape) model.",
    "100020": "Single-operator call: the operator type does not match.",
    "100021": "Single-operator call: the inputs differ from what the operator expects.",
    "100022": "Single-operator call: the outputs differ from what the operator expects.",
    "100023": "Single-operator call: the attributes differ from what the operator expects.",
    "100024": "The single operator was not found.",
    "100025": "Loading a single operator failed.",
    "145001": "Not initialised.",
    "500001": "Internal ACL error.",
    "500003": "Internal runtime error.",
    "500004": "Internal driver error.",
    "500005": "Internal profiling error.",
    "545000": "Unknown internal Graph Engine error.",
    "100028": "An operator compiled in binary-selection mode has no registered selector.",
    "100029": "The operator kernel was not registered when compiling the operator.",
    "100030": "A selector was registered twice for an operator in binary-selection mode.",
    "100031": "The operator kernel was registered twice.",
    "100038": "The static AIPP configuration does not exist.",
    "100039": "The dynamic-library path points at the compile-time stub libraries instead of the real runtime "
              "libraries.",
    "100042": "A profiling collection task already exists.",
    "100043": "Profiling was not initialised (aclprofInit) first.",
    "100044": "A dump task already exists.",
    "100045": "Dump was not initialised (aclmdlInitDump) first.",
    "145019": "Invalid .so file: the library path is nested too deep or the file was deleted.",
    "145011": "Invalid input address for dynamic batch/shape (gear) input.",
    "145012": "Invalid input length for dynamic batch/shape (gear) input.",
    "145013": "Invalid batch size for dynamic batch (gear) input.",
    "148047": "Two incompatible ways of collecting profiling data were mixed.",
    "148048": "Invalid ageing configuration of the operator cache.",
    "148050": "The operator does not support dynamic shapes.",
    "148051": "Related resources have not been released yet (e.g. a channel still exists).",
    "148052": "The JPEG encoding (e.g. arithmetic or progressive) is not supported by the JPEG decoder.",
    "245001": "A memory initialisation or copy operation failed.",
    "245002": "Device memory allocation failed: device memory is used up.",
    "345102": "Sub-healthy state, reached after a redeployment triggered by a device or process fault; APIs can "
              "still be called.",
    "345103": "A user-defined function raised an exception on purpose.",
    "345104": "Data is not aligned (e.g. a user-defined function with several outputs left one unset).",
    "545001": "Loading the model failed internally.",
    "545002": "Loading a model partition failed internally.",
    "545003": "Loading the model weights failed internally.",
    "545004": "Loading the model tasks failed internally.",
    "545005": "Loading the model's operators failed internally.",
    "545006": "Releasing the model memory failed internally.",
    "545007": "An internal command operation failed.",
    "545008": "Getting tensor data failed internally.",
    "545009": "Unloading the model failed internally.",
    "545601": "Model execution timed out.",
    "545602": "A redeployment is in progress.",
}

HCCL_MEANINGS: dict[str, str] = {
    "HCCL_SUCCESS": "success", "HCCL_E_PARA": "parameter error", "HCCL_E_PTR": "invalid (empty) pointer",
    "HCCL_E_MEMORY": "memory error", "HCCL_E_INTERNAL": "internal error", "HCCL_E_NOT_SUPPORT": "not supported",
    "HCCL_E_NOT_FOUND": "resource not found", "HCCL_E_UNAVAIL": "resource unavailable",
    "HCCL_E_SYSCALL": "a system call failed", "HCCL_E_TIMEOUT": "timeout",
    "HCCL_E_OPEN_FILE_FAILURE": "opening a file failed", "HCCL_E_TCP_CONNECT": "TCP connection failed",
    "HCCL_E_ROCE_CONNECT": "RoCE connection failed", "HCCL_E_TCP_TRANSFER": "TCP transfer failed",
    "HCCL_E_ROCE_TRANSFER": "RoCE transfer failed", "HCCL_E_RUNTIME": "a runtime API call failed",
    "HCCL_E_DRV": "a driver API call failed", "HCCL_E_PROFILING": "a profiling call failed",
    "HCCL_E_CCE": "a CCE (kernel) call failed", "HCCL_E_NETWORK": "a network call failed",
    "HCCL_E_AGAIN": "temporary failure: try again", "HCCL_E_REMOTE": "error reported by the remote side",
    "HCCL_E_SUSPENDING": "the communicator is suspending", "HCCL_E_OPRETRY_FAIL": "retrying the operation failed",
    "HCCL_E_OOM": "out of memory",
}
HCCL_FIXES: dict[str, tuple[str, str]] = {
    "HCCL_E_PARA": ("Bad arguments to HCCL: rank/world size out of range, two ranks on one device, or tensors on "
                    "the wrong device.",
                    "Check RANK/LOCAL_RANK/WORLD_SIZE, that every process calls torch.npu.set_device(local_rank) "
                    "before init_process_group, and that tensors are on that device."),
    "HCCL_E_UNAVAIL": ("A resource HCCL needs is unavailable: commonly the HCCL port is still bound by a previous "
                       "job, or the device is busy.",
                       "Make sure earlier jobs have exited (`npu-smi info`), wait and retry; use a different port "
                       "range if several jobs share a node. Read the EI/EJ message printed with it."),
    "HCCL_E_TIMEOUT": ("A collective or connection did not complete in time: a peer rank failed, is slow, or the "
                       "network is down.",
                       "Find the rank that failed first; check HCCL_CONNECT_TIMEOUT / HCCL_EXEC_TIMEOUT and the "
                       "network."),
    "HCCL_E_INTERNAL": ("HCCL failed internally.", "Read the EI messages printed with it and the other ranks' "
                                                  "logs."),
    "HCCL_E_RUNTIME": ("An NPU runtime call made by HCCL failed (device, stream or memory problem).",
                       "Read the runtime code/E-code printed with it; check device health."),
    "HCCL_E_MEMORY": ("HCCL could not get the memory it needs.", "Free device memory or reduce "
                                                                 "HCCL_BUFFSIZE / the job's memory use."),
    "HCCL_E_OOM": ("HCCL ran out of memory.", "Free device memory or reduce HCCL_BUFFSIZE / the job's memory "
                                              "use."),
}

# Rules on the words of a numeric code's name, first match wins: (pattern, cause, fix). Our text.
NAME_RULES: list[tuple[str, str, str]] = [
    (r"ECC|MEM_ERROR|LINK_ERROR|L3_PORT|REMOTE_ERROR",
     "A hardware fault on the device or its links.",
     "Not a code bug: check device health (`npu-smi info`), move to healthy devices, resume from a checkpoint."),
    (r"TIMEOUT|HEARTBEAT",
     "Work did not finish in time: a hung kernel, a peer rank that stopped, or a limit set too low.",
     "Locate the stuck op (ASCEND_LAUNCH_BLOCKING=1) and check other ranks for an earlier error. " + LOG_HINT),
    (r"EXCEPTION|TRAP|OVER_?FLOW|ABORT",
     "A kernel failed while running on the device (bad index/address, overflow, or an op bug).",
     ASYNC_HINT + " " + LOG_HINT),
    (r"OOM|BAD_ALLOC|MEMORY_ALLOCATION|RESOURCE_ALLOC|STORAGE_OVER",
     "Not enough memory or storage.",
     "Reduce the job's memory use (batch size, sequence length, checkpointing) and check other processes."),
    (r"NO_.*RESOURCE|OVER_LIMIT|USE_OUT|TASK_FULL|QUEUE_FULL|CDQ",
     "A limited runtime resource (streams, events, notifies, tasks, queues) is used up.",
     "Release resources you no longer need (streams, events, models) or create fewer at once."),
    (r"CAPTURE|CAPTURED|ACLGRAPH",
     "An operation broke the rules of stream capture (graph capture, e.g. torch.npu.NPUGraph).",
     "Keep capture to one stream/thread, avoid synchronising or unsupported ops while capturing."),
    (r"SNAPSHOT|HOST_MEMORY",
     "A snapshot or host-memory registration step failed.", LOG_HINT),
    (r"PROF",
     "Profiling was configured or called incorrectly.",
     "Check the profiler configuration and the order of the profiling calls (start once, stop once)."),
    (r"DUMP",
     "Data dump was configured or called incorrectly.",
     "Check the dump configuration (e.g. the acl.json used by aclInit) and call order."),
    (r"FILE|PATH|PLGMGR|OPP",
     "A file or path is missing, unreadable, or set wrongly in the environment.",
     "Check that the path exists and is accessible, and that the CANN set_env.sh was sourced."),
    (r"MODEL|AIPP|BATCH|DESERIALIZE",
     "An offline model (.om) or its configuration does not match what the API expects.",
     "Rebuild the model with the ATC tool of the same CANN version and check its inputs."),
    (r"SUBSCRIBE|CALLBACK",
     "A callback or report subscription was set up incorrectly.",
     "Check that the stream/thread is subscribed exactly once before using callbacks."),
    (r"CONTEXT|STREAM|EVENT|LABEL",
     "A stream, event or context was used outside the context/device it belongs to, or in the wrong state.",
     "Use streams and events only on their own device; set the device in every thread."),
    (r"DEVICE|DEVICEID|DIE",
     "The device is unavailable, invalid or in a wrong mode.",
     "Check `npu-smi info` and ASCEND_RT_VISIBLE_DEVICES."),
    (r"NOT_SUPPORT|UNSUPPORTED|FEATURE",
     "The feature is not supported by this chip, driver or CANN version.",
     "Check the versions (`ascend-compat doctor`) and use a supported alternative. " + LOG_HINT),
    (r"INITIALIZE|INIT|FINALIZE",
     "An initialisation or finalisation API was called twice or in the wrong order.",
     "Initialise once per process before other calls; finalise once at the end."),
    (r"PARAM|INVALID|NOT_MATCH|UNALIGNED|ATTR|DATA_TYPE|FORMAT|SHAPE|DATATYPE",
     "An argument passed to the API is invalid for it.",
     "Check the arguments of the call named in the error line (values, dtypes, shapes, handles). " + LOG_HINT),
    (r"NOT_FOUND|LOOKUP|SYMBOL|FUNCTION|KERNEL",
     "Something the call needs (operator, kernel, symbol) was not found or registered.",
     "Check that the CANN toolkit and kernel packages are installed and match. " + LOG_HINT),
    (r"INTERNAL|FAILURE|ERROR|FAIL",
     "A failure inside CANN; this code only names the layer.",
     LOG_HINT),
]

# Rules on E-code titles (and components), first match wins: (pattern, cause, fix). Our text.
TITLE_RULES: list[tuple[str, str, str]] = [
    (r"Insufficient_Host_Memory", "The host (CPU) ran out of memory.",
     "Free host memory: fewer DataLoader workers, smaller prefetch, other processes."),
    (r"Insufficient_Device_Memory|Memory_Allocation", "The NPU ran out of memory.",
     "Reduce batch size / sequence length, use checkpointing, free cached memory (torch.npu.empty_cache())."),
    (r"Communication|Ranktable|Inconsistent|HCCP|HCCL_Version|SDMA|ROCE|Collective|Bind_IP|IP_Address",
     "Collective communication between ranks failed or is misconfigured.",
     "Check all ranks' logs for the first error, the network between nodes, and that every rank runs the same "
     "collectives with the same arguments."),
    (r"Environment_Variable", "An environment variable has a value the component rejects.",
     "Fix or unset the environment variable named in the message."),
    (r"Config", "A configuration item or file is invalid.",
     "Fix the configuration item named in the message."),
    (r"Tiling", "The operator could not tile (split) its work for these inputs.",
     "Try other shapes or attributes for the op (e.g. contiguous/padded inputs) or a newer CANN."),
    (r"Compil|Primitives|Emit_Insn", "Compiling an operator failed.",
     "Check the op's inputs and, for custom ops, their implementation; the message names the op."),
    (r"Shape", "An operator input has a shape the op does not accept.",
     "Fix the shape named in the message (broadcast rules, dimension counts, sizes) in your code."),
    (r"Data_Type|Dtype", "An operator input has a dtype the op does not accept.",
     "Cast the input to a dtype the message lists (often float16/float32)."),
    (r"Format", "An operator input has a storage format the op does not accept.",
     "Use the expected format (e.g. convert with torch_npu.npu_format_cast or make tensors contiguous)."),
    (r"Not_Supported|NOT_SUPPORTED|Unsupported|Operation_Unsupported",
     "The operation, operator or argument is not supported on this chip or CANN version.",
     "Use a supported alternative, upgrade CANN/torch_npu, or run that op on CPU."),
    (r"Null_Pointer|Tensor_Missing|Attribute_Missing", "A required argument or input is missing (null).",
     "Pass the input/argument named in the message."),
    (r"Argument|Attr|Input|Invalid", "An argument has a value the component rejects.",
     "Fix the value named in the message (it states the expected value or range)."),
    (r"File|Directory|Path", "A file or directory could not be opened, parsed or created.",
     "Check the path named in the message, its permissions and free disk space."),
    (r"Package|Version|Verify|OPP", "A software package is missing, damaged or of the wrong version.",
     "Reinstall matching driver/firmware/CANN packages (`ascend-compat doctor` checks the versions)."),
    (r"Python", "The Python environment used by CANN's compiler is wrong.",
     "Use a supported Python version and install the modules CANN needs (e.g. via its requirements)."),
    (r"Resource|Busy|Queue|Insufficient", "A resource is busy or used up.",
     "Stop other work on the device or reduce the job's resource use."),
    (r"Device|Permission", "The device is absent, abnormal, or not accessible to this process.",
     "Check `npu-smi info`, ASCEND_RT_VISIBLE_DEVICES and device permissions/mounts."),
    (r"Timeout", "An operation timed out.", LOG_HINT),
    (r"Inner|Terminated|Cgroup|Subprocess|Scheduler|TSDaemon", "A CANN component failed internally.",
     LOG_HINT),
    (r"Execution|Model|Stream|Binding|Profiling|Graph|Node|Numa|Recompute|ONNX|Slice",
     "A step failed; the message says which.", LOG_HINT),
]

# Our labels where the reference's module name reads badly in a sentence.
MODULE_LABELS = {"EZ": "Operators / aclnn"}

# E-code module letters and digit blocks that error_code.json leaves without a class.
DIGIT_COMPONENTS: dict[str, str] = {
    "E2": "FE (fusion engine)", "E3": "AI CPU", "E4": "TE Fusion", "W4": "TE Fusion",
    "E5": "Operators", "E6": "Operators", "E7": "Operators", "E8": "Operators", "E9": "Operators",
    "EA": "Operators",
}


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# Abbreviations in constant names and header comments, spelled out (and two typos of the header fixed).
ABBREVIATIONS = {
    "attr": "attribute", "addr": "address", "id": "ID", "ts": "task scheduler (TS)", "drv": "driver",
    "hdc": "host-device channel (HDC)", "aicpu": "AI CPU", "aicore": "AI Core", "aic": "AI Core",
    "aiv": "Vector Core", "aivec": "Vector Core", "ffts+": "FFTS+", "dma": "DMA", "ipc": "IPC", "soc": "SoC",
    "ccu": "CCU", "cdq": "CDQ", "aipp": "AIPP", "op": "operator", "exec": "execution", "param": "parameter",
    "internel": "internal", "msg": "message", "num": "number", "cb": "callback", "oper": "operation",
    "caputring": "capturing", "defalut": "default", "acl": "ACL", "hbm": "HBM", "ecc": "ECC", "mem": "memory",
    "dieid": "die ID", "l3": "L3", "sysparamopt": "system parameter option", "oom": "OOM",
}


def _human(words: str) -> str:
    """'ACL_ERROR_RT_STREAM_SYNC_TIMEOUT' -> 'stream sync timeout', with abbreviations spelled out."""
    words = re.sub(r"^ACL_ERROR_(RT_|GE_)?", "", words).replace("_", " ").lower().strip()
    return " ".join(ABBREVIATIONS.get(w, w) for w in words.split())


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", ")")) else text + "."


def _rule(rules: list[tuple[str, str, str]], key: str) -> Optional[tuple[str, str]]:
    for pattern, cause, fix in rules:
        if re.search(pattern, key):
            return cause, fix
    return None


def _acl_family(code: str) -> str:
    if code == "0":
        return "success"
    return {"1": "acl_parameter", "2": "acl_resource", "3": "acl_business", "5": "acl_internal"}[code[0]]


def _acl_component(name: str) -> str:
    if "_DRV_" in name:
        return "Driver"
    if name.startswith("ACL_ERROR_RT_"):
        return "Runtime (RTS)"
    if name.startswith("ACL_ERROR_GE_"):
        return "Graph Engine (GE)"
    if "PROF" in name:
        return "Profiling"
    return "ACL"


def _entry(code: str, family: str, component: str, name: Optional[str], meaning: str, cause: str, fix: str,
           source: str, curated: bool, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"code": code, "family": family, "component": component}
    if name:
        out["name"] = name
    out.update({"meaning": meaning, "cause": cause, "fix": fix})
    out.update({k: v for k, v in extra.items() if v})
    out["curated"] = curated
    out["source"] = source
    return out


def _acl(codes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for code, ref in codes.items():
        name = ref["name"]
        sources = [s for s in (ref.get("src_zh"), ref.get("src_hdr"), ref.get("src_en")) if s]
        family, component = _acl_family(code), _acl_component(name)
        deprecated = "deprecated" if ref.get("deprecated_note") else None
        if code in CURATED:
            meaning, cause, fix = CURATED[code]
            curated = True
        else:
            curated = False
            if code in ACL_MEANINGS:
                meaning = ACL_MEANINGS[code]
            else:
                meaning = _sentence(f"{component}: {_human(ref.get('header_comment') or name)}")
            if family == "success":
                cause, fix = "The call succeeded.", "Nothing to fix."
            else:
                ruled = _rule(NAME_RULES, re.sub(r"^ACL_ERROR_", "", name))
                cause, fix = ruled if ruled else (NO_CAUSE, LOG_HINT)
        out[code] = _entry(code, family, component, name, meaning, cause, fix, "; ".join(sources), curated,
                           meaning_zh=ref.get("meaning_zh"), status=deprecated)
    return out


def _aclnn(codes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for code, ref in codes.items():
        if code in CURATED:
            meaning, cause, fix = CURATED[code]
        else:
            meaning = ACLNN_MEANINGS[code]
            if code == "0":
                cause, fix = "The call succeeded.", "Nothing to fix."
            else:
                cause = ("A problem inside the operator library: often a kernel/ops package that is missing or "
                         "does not match the CANN toolkit.")
                fix = "Check the CANN toolkit and ops package versions and set_env.sh. " + LOG_HINT
        family = "success" if code == "0" else "aclnn"
        out[code] = _entry(code, family, "aclnn (operator API)", ref["name"], meaning, cause, fix, ref["src"],
                           code in CURATED, meaning_zh=ref.get("meaning_zh"))
    return out


def _hccl(codes: dict[str, str]) -> dict[str, dict[str, Any]]:
    out = {}
    for code, name in codes.items():
        meaning = _sentence(f"HCCL result {name}: {HCCL_MEANINGS[name]}")
        if code == "0":
            cause, fix = "The call succeeded.", "Nothing to fix."
        else:
            cause, fix = HCCL_FIXES.get(name, (
                "A collective-communication call failed.",
                "Read the EI/EJ message printed with it and the other ranks' logs for the first error."))
        out[code] = _entry(code, "success" if code == "0" else "hccl", "HCCL", name, meaning, cause, fix,
                           SRC_HCCL, name in HCCL_FIXES)
    return out


def _ecode_component(code: str, ref: Optional[dict[str, Any]], modules: dict[str, str]) -> str:
    if code[:2] in modules:
        return modules[code[:2]]
    if ref and ref.get("errClass"):
        return ref["errClass"].strip().removesuffix(" Errors").replace("TEFusion", "TE Fusion")
    return DIGIT_COMPONENTS.get(code[:2], "CANN")


def _ecodes(codes: dict[str, dict[str, Any]], modules: dict[str, str]) -> dict[str, dict[str, Any]]:
    out = {}
    for code, ref in codes.items():
        component = _ecode_component(code, ref, modules)
        title = ref.get("errTitle") or ""
        template = ref["ErrMessage"].strip()
        if code in CURATED:
            meaning, cause, fix = CURATED[code]
        else:
            if title:
                meaning = _sentence(f"{component}: {_human(title)}") + " CANN's message gives the details."
            else:
                meaning = f"{component} check failed; CANN prints: '{template.replace('%s', '…')}'"
            ruled = _rule(TITLE_RULES, title) or _rule(TITLE_RULES, component)
            cause, fix = ruled if ruled else ("A CANN component reported an error.", LOG_HINT)
        out[code] = _entry(code, "cann_message", component, title or None, meaning, cause, fix, ref["src"],
                           code in CURATED, template=template if template.strip("%s .") else None,
                           status="warning" if code.startswith("W") else None)
    # xx9999 = the module's inner error (documented in the macro guide) even where error_code.json has no entry.
    for prefix, component in modules.items():
        code = f"{prefix}9999"
        if code in out:
            continue
        meaning, cause, fix = CURATED.get(code) or (
            _sentence(f"{component}: inner error; the lines after the code give the details"),
            f"A failure inside the {component} component.", LOG_HINT)
        out[code] = _entry(code, "cann_message", component, "Inner_Error", meaning, cause, fix, SRC_MACROS,
                           code in CURATED)
    return out


ERR_MODULE_TEXT = {
    "PTA": "torch_npu core (PyTorch adapter)", "OPS": "torch_npu operator layer", "DIST": "torch_npu distributed "
    "layer (HCCL process group)", "GRAPH": "torch_npu graph mode", "PROF": "torch_npu profiler",
    "UNKNOWN": "unknown torch_npu module",
}
ERR_TYPE_FIX = {
    "100": "This wraps an ACL error: look up the 'error code is N' number and the E-codes next to it.",
    "200": "This wraps an HCCL error: look up the 'HCCL function error ... error code is N' number and the EI "
           "codes next to it.",
    "300": "This wraps a Graph Engine error: look up the GE code/E-codes next to it.",
    "006": "Usually device out-of-memory: reduce memory use; see the E-code (EL0004) or ACL code printed with it.",
    "011": "Check whether another rank failed first, or raise the relevant timeout.",
    "007": "Use a supported alternative or upgrade torch_npu/CANN.",
    "012": "Check file and device permissions of the user running the job.",
}


def _err(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for mod, mod_name in spec["modules"].items():
        for typ, typ_name in spec["types"].items():
            code = f"ERR{mod}{typ}"
            if code in ERR_CURATED:
                meaning, cause, fix = ERR_CURATED[code]
            else:
                meaning = f"{ERR_MODULE_TEXT.get(mod_name, mod_name)} ({mod_name}): {typ_name}."
                cause = (f"torch_npu classified the failure as '{typ_name}' in its {mod_name} module; the "
                         "lower-level code printed before it is more specific.")
                fix = ERR_TYPE_FIX.get(typ, "Read the message after the code and the lines before it.")
            out[code] = _entry(code, "torch_npu", f"torch_npu {mod_name}", f"{mod_name} {typ_name}", meaning,
                               cause, fix, SRC_ERR, code in ERR_CURATED, module=mod_name, type=typ_name)
    return out


def _special_code(key: str) -> str:
    match = re.match(r"\s*(E[A-Z]\d{4}|\d+)", key)
    if not match:
        raise SystemExit(f"torch_npu_special key without a code: {key!r}")
    return match.group(1)


def build(ref_path: Path) -> dict[str, Any]:
    """The data file's content, from the reference JSON at ``ref_path``."""
    ref = _load(ref_path)
    modules = {k: MODULE_LABELS.get(k, v) for k, v in ref["E_prefix_modules"].items() if re.fullmatch(r"[A-Z]{2}", k)}
    sections = [_acl(ref["acl_numeric"]), _aclnn(ref["aclnn_status"]), _hccl(ref["hccl_result"]),
                _ecodes(ref["cann_E_codes"], modules), _err(ref["torch_npu_ERR"])]
    codes: dict[str, dict[str, Any]] = {}
    for section in sections:
        for code, entry in section.items():
            if code in codes:
                if code != "0":
                    raise SystemExit(f"code {code} appears in two sections")
                # 0 is success in ACL, aclnn and HCCL alike: one entry naming all three.
                codes[code]["name"] += " / " + entry["name"]
                codes[code]["source"] += "; " + entry["source"]
                continue
            codes[code] = entry
    codes["0"].update(meaning="Success (ACL, aclnn and HCCL all use 0 for success): not an error.",
                      component="ACL / aclnn / HCCL")
    codes["0"].pop("status", None)
    for key, reaction in ref["torch_npu_special"].items():
        if key == "src":
            continue
        code = _special_code(key)
        codes[code]["torch_npu"] = reaction
        codes[code]["source"] += "; " + SRC_SPECIAL
    unused = set(CURATED) - set(codes)
    if unused:
        raise SystemExit(f"CURATED codes not in the reference: {sorted(unused)}")
    return {
        "schema": 1,
        "source": str(ref_path.name) + " (see tools/build_cann_errors.py for the origin of each section)",
        "note": ("meaning/cause/fix are ascend-compat's wording (curated: hand-written; otherwise generated from "
                 "the structured fields). meaning_zh and template are the reference's own text. torch_npu: how "
                 "torch_npu reacts to the code."),
        "families": FAMILIES,
        "e_modules": modules,
        "codes": {c: codes[c] for c in sorted(codes, key=_sort_key)},
    }


def _sort_key(code: str) -> tuple[int, int, str]:
    return (0, int(code), "") if code.isdigit() else (1, 0, code)


def render(data: dict[str, Any]) -> str:
    """Deterministic text: the header, then one line per code."""
    return jsonlines.render(data, lambda key, _: key == "codes")


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    ref = Path(argv[0]) if argv else DEFAULT_REFERENCE
    if not ref.is_file():
        print(f"build_cann_errors: reference data not found: {ref} (give REFERENCE_JSON)", file=sys.stderr)
        return 2
    data = build(ref)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(render(data), encoding="utf-8")
    tmp.replace(OUT)
    curated = sum(e["curated"] for e in data["codes"].values())
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes): {len(data['codes'])} codes, "
          f"{curated} curated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

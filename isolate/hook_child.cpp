// sandbox_hook_child: a sandbox process for tests only, never shipped. It is child_main() with
// one extra global, `__native`, whose functions make system calls directly from inside the
// isolate. That is what code that broke out of V8 could do, so the tests in process_test.cpp
// use it to prove what the OS layers under the isolate still stop.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <node.h>
#include <v8.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "channel/process_contract.h"
#include "isolate/addon.h"
#include "isolate/child.h"

extern char** environ;

namespace {

v8::Local<v8::String> text(v8::Isolate* isolate, const std::string& value) {
  return v8::String::NewFromUtf8(isolate, value.c_str()).ToLocalChecked();
}

// "ok", or the errno name of the failure ("EPERM").
std::string outcome_of(long rc) {
  if (rc >= 0) return "ok";
  const char* name = ::strerrorname_np(errno);
  return name ? name : std::to_string(errno);
}

std::string string_arg(const v8::FunctionCallbackInfo<v8::Value>& info, int index) {
  v8::String::Utf8Value value(info.GetIsolate(), info[index]);
  return *value ? *value : "";
}

int int_arg(const v8::FunctionCallbackInfo<v8::Value>& info, int index) {
  return info[index]->Int32Value(info.GetIsolate()->GetCurrentContext()).FromMaybe(0);
}

void open_file(const v8::FunctionCallbackInfo<v8::Value>& info) {
  const long fd = ::open(string_arg(info, 0).c_str(), O_RDONLY);
  info.GetReturnValue().Set(text(info.GetIsolate(), outcome_of(fd)));
}

void open_socket(const v8::FunctionCallbackInfo<v8::Value>& info) {
  const long fd = ::socket(AF_INET, SOCK_STREAM, 0);
  info.GetReturnValue().Set(text(info.GetIsolate(), outcome_of(fd)));
}

// A TCP connection to 127.0.0.1:<port>, with a socket made by any means that works.
void connect_to(const v8::FunctionCallbackInfo<v8::Value>& info) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fd = static_cast<int>(::syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
  if (fd < 0) {
    info.GetReturnValue().Set(text(info.GetIsolate(), "socket: " + outcome_of(fd)));
    return;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(int_arg(info, 0)));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const long rc = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  info.GetReturnValue().Set(text(info.GetIsolate(), "connect: " + outcome_of(rc)));
}

void run_program(const v8::FunctionCallbackInfo<v8::Value>& info) {
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  const long rc = ::execve("/bin/true", argv, environ);
  info.GetReturnValue().Set(text(info.GetIsolate(), outcome_of(rc)));
}

// Submits to an io_uring, as code that escaped V8 could through one of the rings node's event
// loops made before the lockdown (an operation in a ring is no system call the filter sees).
void enter_ring(const v8::FunctionCallbackInfo<v8::Value>& info) {
  const long rc = ::syscall(SYS_io_uring_enter, 0, 1, 0, 0, nullptr, 0);
  info.GetReturnValue().Set(text(info.GetIsolate(), outcome_of(rc)));
}

void start_process(const v8::FunctionCallbackInfo<v8::Value>& info) {
  const long pid = ::fork();
  if (pid == 0) ::_exit(0);
  info.GetReturnValue().Set(text(info.GetIsolate(), outcome_of(pid)));
}

void environment(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Array> out = v8::Array::New(isolate);
  std::uint32_t i = 0;
  for (char** entry = environ; entry && *entry; ++entry) {
    out->Set(isolate->GetCurrentContext(), i++, text(isolate, *entry)).Check();
  }
  info.GetReturnValue().Set(out);
}

// Which descriptors below `limit` are open (a zero-byte read fails with EBADF only if not).
void open_descriptors(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Array> out = v8::Array::New(isolate);
  std::uint32_t n = 0;
  char byte;
  for (int fd = 0; fd < int_arg(info, 0); ++fd) {
    if (::read(fd, &byte, 0) == 0 || errno != EBADF) {
      out->Set(isolate->GetCurrentContext(), n++, v8::Integer::New(isolate, fd)).Check();
    }
  }
  info.GetReturnValue().Set(out);
}

void user_id(const v8::FunctionCallbackInfo<v8::Value>& info) {
  info.GetReturnValue().Set(static_cast<double>(::getuid()));
}

void process_id(const v8::FunctionCallbackInfo<v8::Value>& info) {
  info.GetReturnValue().Set(static_cast<double>(::getpid()));
}

void crash(const v8::FunctionCallbackInfo<v8::Value>&) { (void)::raise(SIGSEGV); }

// Spins in native code, where no V8 interrupt can reach it.
void hang(const v8::FunctionCallbackInfo<v8::Value>&) {
  for (;;) asm volatile("" ::: "memory");
}

// Writes `bytes` (a string of byte values) straight into the channel, as a compromised process
// could.
void write_channel(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Local<v8::String> value = info[0].As<v8::String>();
  std::string bytes(static_cast<std::size_t>(value->Length()), '\0');
  value->WriteOneByteV2(info.GetIsolate(), 0, value->Length(),
                        reinterpret_cast<std::uint8_t*>(bytes.data()));
  const long rc = ::write(codemode::channel::kChannelFd, bytes.data(), bytes.size());
  info.GetReturnValue().Set(text(info.GetIsolate(), outcome_of(rc)));
}

void install(v8::Isolate* isolate, v8::Local<v8::Context> context) {
  v8::Local<v8::Object> native = v8::Object::New(isolate);
  auto add = [&](const char* name, v8::FunctionCallback callback) {
    native->Set(context, text(isolate, name), v8::Function::New(context, callback).ToLocalChecked())
        .Check();
  };
  add("open", open_file);
  add("socket", open_socket);
  add("connect", connect_to);
  add("exec", run_program);
  add("uring", enter_ring);
  add("fork", start_process);
  add("env", environment);
  add("fds", open_descriptors);
  add("uid", user_id);
  add("pid", process_id);
  add("crash", crash);
  add("hang", hang);
  add("writeChannel", write_channel);
  context->Global()->Set(context, text(isolate, "__native"), native).Check();
}

}  // namespace

// The hooked sandbox process: the shipped one, plus __native.
NODE_MODULE_INIT(/* exports, module, context */) {
  using namespace codemode;
  if (!isolate::attach_to_node(context)) ::_exit(channel::kExitWrongEngine);
  isolate::ChildOptions options{.extend_context = install};
  for (const std::string& argument : isolate::addon_arguments(context)) {
    if (auto namespaces = channel::parse_namespaces_argument(argument)) {
      options.namespaces = *namespaces;
    }
  }
  ::_exit(isolate::child_main(options));
}

//! A loopback port where connections are refused, for as long as the value
//! lives. The socket is bound but never listens: the kernel answers every
//! connect with a reset, and no other test can be given the port meanwhile
//! (a port merely released could be, and then "refused" became a timeout).

use std::net::SocketAddr;

use tokio::net::TcpSocket;

pub struct ClosedPort {
    _socket: TcpSocket,
    addr: SocketAddr,
}

impl ClosedPort {
    pub fn new() -> Self {
        let socket = TcpSocket::new_v4().expect("a socket");
        socket
            .bind("127.0.0.1:0".parse().expect("an address"))
            .expect("bind");
        let addr = socket.local_addr().expect("its address");
        Self {
            _socket: socket,
            addr,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

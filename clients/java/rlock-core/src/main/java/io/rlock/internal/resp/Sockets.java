package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/** The socket of a new connection: TCP (no delay, keep-alive), then TLS through the JDK when asked. */
final class Sockets {
    private Sockets() {
    }

    static Socket connect(RespConnection.Settings settings) throws IOException {
        int connectMs = (int) Math.max(1, settings.connectTimeout.toMillis());
        Socket socket = new Socket();
        try {
            socket.connect(new InetSocketAddress(settings.host, settings.port), connectMs);
            socket.setTcpNoDelay(true);
            socket.setKeepAlive(true);
            if (settings.ssl != null) {
                SSLSocket tls = (SSLSocket) settings.ssl.createSocket(socket, settings.host, settings.port, true);
                if (settings.verifyHostname) {
                    SSLParameters parameters = tls.getSSLParameters();
                    parameters.setEndpointIdentificationAlgorithm("HTTPS");
                    tls.setSSLParameters(parameters);
                }
                tls.setSoTimeout(connectMs);
                tls.startHandshake();
                tls.setSoTimeout(0);
                socket = tls;
            }
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
        return socket;
    }
}
